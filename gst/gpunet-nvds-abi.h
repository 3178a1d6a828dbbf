/* gpunet-nvds-abi.h: the few DeepStream structure fields gpunetclassify reads or
 * writes, declared by us from NVIDIA's public DeepStream API reference (nvdsmeta.h,
 * nvbufsurface.h, gstnvdsmeta.h as documented for 6.1 to 9.1).  No NVIDIA header is
 * included or copied: each structure is a prefix (or the whole) of NVIDIA's, with the
 * fields we do not use as opaque padding, and the static checks below pin every
 * offset, so a wrong declaration fails the build instead of reading the wrong bytes.
 * The element sizes the 9.1 library reports are checked at run time
 * (gstgpunetnvds.c). */
#ifndef __GPUNET_NVDS_ABI_H__
#define __GPUNET_NVDS_ABI_H__

#include <stddef.h>
#include <stdint.h>
#include <glib.h>

G_BEGIN_DECLS

/* ---- NvBufSurface (what mapping a memory:NVMM buffer gives) ------------------- */

/* NvBufSurfaceMemType */
enum
{
  GPUNET_NVBUF_MEM_DEFAULT = 0,         /* CUDA device memory on dGPU */
  GPUNET_NVBUF_MEM_CUDA_PINNED = 1,
  GPUNET_NVBUF_MEM_CUDA_DEVICE = 2,
  GPUNET_NVBUF_MEM_CUDA_UNIFIED = 3,
  GPUNET_NVBUF_MEM_SURFACE_ARRAY = 4,   /* Jetson */
  GPUNET_NVBUF_MEM_HANDLE = 5,          /* Jetson */
  GPUNET_NVBUF_MEM_SYSTEM = 6
};

/* NvBufSurfaceLayout */
enum
{
  GPUNET_NVBUF_LAYOUT_PITCH = 0,
  GPUNET_NVBUF_LAYOUT_BLOCK_LINEAR = 1
};

/* The NvBufSurfaceColorFormat values we read (the others are refused). */
enum
{
  GPUNET_NVBUF_COLOR_YUV420 = 2,
  GPUNET_NVBUF_COLOR_YUV420_ER = 4,
  GPUNET_NVBUF_COLOR_NV12 = 6,
  GPUNET_NVBUF_COLOR_NV12_ER = 7,
  GPUNET_NVBUF_COLOR_RGBA = 19,
  GPUNET_NVBUF_COLOR_BGRA = 20,
  GPUNET_NVBUF_COLOR_RGBx = 23,
  GPUNET_NVBUF_COLOR_BGRx = 24,
  GPUNET_NVBUF_COLOR_RGB = 27,
  GPUNET_NVBUF_COLOR_BGR = 28
};

#define GPUNET_NVBUF_MAX_PLANES 4

/* NvBufSurfacePlaneParams, its documented fields (the reserved tail is not read). */
typedef struct
{
  uint32_t num_planes;
  uint32_t width[GPUNET_NVBUF_MAX_PLANES];
  uint32_t height[GPUNET_NVBUF_MAX_PLANES];
  uint32_t pitch[GPUNET_NVBUF_MAX_PLANES];
  uint32_t offset[GPUNET_NVBUF_MAX_PLANES];
  uint32_t psize[GPUNET_NVBUF_MAX_PLANES];
  uint32_t bytesPerPix[GPUNET_NVBUF_MAX_PLANES];
} GpunetNvBufPlanes;

/* The leading fields of NvBufSurfaceParams: the same in 6.1 to 9.1; the whole
 * structure (the surfaceList stride) is 384 bytes up to 7.1 and 416 from 8.0. */
typedef struct
{
  uint32_t width;
  uint32_t height;
  uint32_t pitch;
  int32_t colorFormat;
  int32_t layout;
  uint64_t bufferDesc;
  uint32_t dataSize;
  void *dataPtr;
  GpunetNvBufPlanes planeParams;
  void *planeParams_reserved[16];       /* NvBufSurfacePlaneParams._reserved */
  /* NvBufSurfaceMappedAddr (its leading fields): eglImage is written by
   * NvBufSurfaceMapEglImage (Jetson) */
  void *mappedAddr_addr[GPUNET_NVBUF_MAX_PLANES];
  void *mappedAddr_eglImage;
} GpunetNvBufSurfaceParams;

#define GPUNET_NVBUF_PARAMS_STRIDE_V6 384       /* DeepStream 6.1 - 7.1 */
#define GPUNET_NVBUF_PARAMS_STRIDE_V8 416       /* DeepStream 8.0 - 9.x */

/* The leading fields of NvBufSurface (the whole structure is 64 bytes). */
typedef struct
{
  uint32_t gpuId;
  uint32_t batchSize;
  uint32_t numFilled;
  uint8_t isContiguous;         /* C bool */
  int32_t memType;
  void *surfaceList;            /* numFilled entries of the version's stride */
} GpunetNvBufSurface;

/* ---- NvDs metadata (nvdsmeta.h) ----------------------------------------------- */

/* NvDsMetaType values used here */
enum
{
  GPUNET_NVDS_FRAME_META = 2,
  GPUNET_NVDS_OBJ_META = 3,
  GPUNET_NVDS_CLASSIFIER_META = 5,
  GPUNET_NVDS_LABEL_INFO_META = 6,
  GPUNET_NVDS_BATCH_GST_META = 4097     /* NVDS_GST_CUSTOM_META + 1 */
};

#define GPUNET_NVDS_MAX_LABEL_SIZE 128
#define GPUNET_NVDS_UNTRACKED_OBJECT_ID G_GUINT64_CONSTANT (0xFFFFFFFFFFFFFFFF)

/* NvDsBaseMeta */
typedef struct
{
  void *batch_meta;
  int32_t meta_type;
  void *uContext;
  void *copy_func;
  void *release_func;
} GpunetNvDsBaseMeta;

/* NvDsMetaPool, leading fields */
typedef struct
{
  int32_t meta_type;
  uint32_t max_elements_in_pool;
  uint32_t element_size;
} GpunetNvDsMetaPool;

/* NvDsBatchMeta, leading fields */
typedef struct
{
  GpunetNvDsBaseMeta base_meta;
  uint32_t max_frames_in_batch;
  uint32_t num_frames_in_batch;
  GpunetNvDsMetaPool *frame_meta_pool;
  GpunetNvDsMetaPool *obj_meta_pool;
  GpunetNvDsMetaPool *classifier_meta_pool;
  GpunetNvDsMetaPool *display_meta_pool;
  GpunetNvDsMetaPool *user_meta_pool;
  GpunetNvDsMetaPool *label_info_meta_pool;
  GList *frame_meta_list;
} GpunetNvDsBatchMeta;

/* NvDsFrameMeta, leading fields */
typedef struct
{
  GpunetNvDsBaseMeta base_meta;
  uint32_t pad_index;
  uint32_t batch_id;
  int32_t frame_num;
  uint64_t buf_pts;
  uint64_t ntp_timestamp;
  uint32_t source_id;
  int32_t num_surfaces_per_frame;
  uint32_t source_frame_width;
  uint32_t source_frame_height;
  uint32_t surface_type;
  uint32_t surface_index;
  uint32_t num_obj_meta;
  int32_t bInferDone;
  GList *obj_meta_list;
} GpunetNvDsFrameMeta;

/* NvOSD_RectParams, leading fields */
typedef struct
{
  float left, top, width, height;
  uint32_t border_width;
} GpunetNvOSDRect;

/* NvDsObjectMeta, leading fields up to rect_params (the same from 6.1 to 9.1; what
 * follows changed size between versions and is reached through the library's
 * functions only). */
typedef struct
{
  GpunetNvDsBaseMeta base_meta;
  void *parent;
  int32_t unique_component_id;
  int32_t class_id;
  uint64_t object_id;
  float detector_bbox_info[4];
  float tracker_bbox_info[4];
  float confidence;
  float tracker_confidence;
  GpunetNvOSDRect rect_params;
} GpunetNvDsObjectMeta;

/* NvDsClassifierMeta (whole: 64 bytes) */
typedef struct
{
  GpunetNvDsBaseMeta base_meta;
  uint32_t num_labels;
  int32_t unique_component_id;
  GList *label_info_list;
  const char *classifier_type;
} GpunetNvDsClassifierMeta;

/* NvDsLabelInfo, leading fields (the 9.1 pool's elements are 200 bytes) */
typedef struct
{
  GpunetNvDsBaseMeta base_meta;
  uint32_t num_classes;
  char result_label[GPUNET_NVDS_MAX_LABEL_SIZE];
  char *pResult_label;
  uint32_t result_class_id;
  uint32_t label_id;
  float result_prob;
} GpunetNvDsLabelInfo;

/* NvDsMeta (gstnvdsmeta.h): the GstMeta DeepStream attaches, leading fields */
typedef struct
{
  uint8_t gst_meta[16];         /* GstMeta */
  void *meta_data;
  void *user_data;
  int32_t meta_type;
} GpunetNvDsGstMeta;

/* The documented offsets, pinned (x86_64 and aarch64 LP64). */
#define GPUNET_NVDS_ASSERT_OFFSET(t, f, o) \
  G_STATIC_ASSERT (G_STRUCT_OFFSET (t, f) == (o))
GPUNET_NVDS_ASSERT_OFFSET (GpunetNvBufSurface, memType, 16);
GPUNET_NVDS_ASSERT_OFFSET (GpunetNvBufSurface, surfaceList, 24);
GPUNET_NVDS_ASSERT_OFFSET (GpunetNvBufSurfaceParams, colorFormat, 12);
GPUNET_NVDS_ASSERT_OFFSET (GpunetNvBufSurfaceParams, layout, 16);
GPUNET_NVDS_ASSERT_OFFSET (GpunetNvBufSurfaceParams, dataSize, 32);
GPUNET_NVDS_ASSERT_OFFSET (GpunetNvBufSurfaceParams, dataPtr, 40);
GPUNET_NVDS_ASSERT_OFFSET (GpunetNvBufSurfaceParams, planeParams, 48);
/* the same in 6.1-7.1 and 8.0-9.x (9.1's NvBufSurfaceMap writes addr[] there) */
GPUNET_NVDS_ASSERT_OFFSET (GpunetNvBufSurfaceParams, mappedAddr_addr, 280);
GPUNET_NVDS_ASSERT_OFFSET (GpunetNvBufSurfaceParams, mappedAddr_eglImage, 312);
G_STATIC_ASSERT (sizeof (GpunetNvBufSurfaceParams) <=
    GPUNET_NVBUF_PARAMS_STRIDE_V6);
GPUNET_NVDS_ASSERT_OFFSET (GpunetNvDsBaseMeta, meta_type, 8);
G_STATIC_ASSERT (sizeof (GpunetNvDsBaseMeta) == 40);
GPUNET_NVDS_ASSERT_OFFSET (GpunetNvDsMetaPool, element_size, 8);
GPUNET_NVDS_ASSERT_OFFSET (GpunetNvDsBatchMeta, max_frames_in_batch, 40);
GPUNET_NVDS_ASSERT_OFFSET (GpunetNvDsBatchMeta, label_info_meta_pool, 88);
GPUNET_NVDS_ASSERT_OFFSET (GpunetNvDsBatchMeta, frame_meta_list, 96);
GPUNET_NVDS_ASSERT_OFFSET (GpunetNvDsFrameMeta, batch_id, 44);
GPUNET_NVDS_ASSERT_OFFSET (GpunetNvDsFrameMeta, buf_pts, 56);
GPUNET_NVDS_ASSERT_OFFSET (GpunetNvDsFrameMeta, source_id, 72);
GPUNET_NVDS_ASSERT_OFFSET (GpunetNvDsFrameMeta, num_obj_meta, 96);
GPUNET_NVDS_ASSERT_OFFSET (GpunetNvDsFrameMeta, obj_meta_list, 104);
GPUNET_NVDS_ASSERT_OFFSET (GpunetNvDsObjectMeta, unique_component_id, 48);
GPUNET_NVDS_ASSERT_OFFSET (GpunetNvDsObjectMeta, object_id, 56);
GPUNET_NVDS_ASSERT_OFFSET (GpunetNvDsObjectMeta, rect_params, 104);
G_STATIC_ASSERT (sizeof (GpunetNvDsClassifierMeta) == 64);
GPUNET_NVDS_ASSERT_OFFSET (GpunetNvDsLabelInfo, result_label, 44);
GPUNET_NVDS_ASSERT_OFFSET (GpunetNvDsLabelInfo, pResult_label, 176);
GPUNET_NVDS_ASSERT_OFFSET (GpunetNvDsLabelInfo, result_prob, 192);
GPUNET_NVDS_ASSERT_OFFSET (GpunetNvDsGstMeta, meta_data, 16);
GPUNET_NVDS_ASSERT_OFFSET (GpunetNvDsGstMeta, meta_type, 32);

/* What the fields above need of each pool element: a library whose pools are
 * smaller cannot be the layout declared here. */
#define GPUNET_NVDS_MIN_FRAME_SIZE (G_STRUCT_OFFSET (GpunetNvDsFrameMeta, obj_meta_list) + 8)
#define GPUNET_NVDS_MIN_OBJ_SIZE (sizeof (GpunetNvDsObjectMeta))
#define GPUNET_NVDS_MIN_CLASSIFIER_SIZE (sizeof (GpunetNvDsClassifierMeta))
#define GPUNET_NVDS_MIN_LABEL_SIZE (sizeof (GpunetNvDsLabelInfo))

G_END_DECLS

#endif /* __GPUNET_NVDS_ABI_H__ */
