/* module_find.h: where the engine looks for a backend module it opens at run time
 * (libgpunet-cpu.so, libgpunet-cuda.so): beside the binary the engine is linked into,
 * then the install directory, then the build tree.  Shared by cpu_loader.c and
 * cuda_loader.c; each keeps its own environment override and its own sentences. */
#ifndef GPUNET_MODULE_FIND_H
#define GPUNET_MODULE_FIND_H

/* The first of these that exists, newly allocated (free()): `name` in the directory of
 * the binary this code is linked into (the plugin or a tool), `install_dir`/`name`
 * (NULL: not looked at), `build_path` (NULL: not looked at).  NULL when none exists;
 * then *looked (when not NULL) is a newly allocated, comma-separated list of the paths
 * tried.  Any thread. */
char *gpunet_module_find (const char *name, const char *install_dir, const char *build_path,
    char **looked);

#endif
