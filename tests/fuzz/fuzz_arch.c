/* fuzz_arch.c: the JSON reader (models/json.c: the strict check, then json-glib) and
 * the architecture validator on top of it (models/arch.c) over arbitrary bytes: the
 * text an architecture file holds.  Text the check passes must parse in json-glib, and
 * what the reader accepts is written back and must read back equal, so json-glib's
 * parser and generator are held to the check too. */
#include "fuzz_common.h"

#include "arch.h"
#include "json.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  JsonNode *json = NULL, *back = NULL;
  int *lines = NULL;
  gpunet_arch *arch = NULL;
  char *err = NULL;

  gpunet_status st = gpunet_json_parse ((const char *) data, size, &json, &lines, &err);
  if (st != GPUNET_OK && err && strstr (err, "json-glib refused"))
    __builtin_trap ();     /* the check passed text json-glib cannot read */
  if (st == GPUNET_OK) {
    (void) gpunet_json_get (json, "data");
    if (lines && json_array_get_length (json_node_get_array (json)) > 0)
      (void) lines[json_array_get_length (json_node_get_array (json)) - 1];
    GString *text = g_string_new (NULL);
    gpunet_json_generate (json, text);
    if (gpunet_json_parse (text->str, text->len, &back, NULL, &err) != GPUNET_OK
        || !json_node_equal (json, back))
      __builtin_trap ();   /* our own output must read back to the same tree */
    json_node_unref (back);
    g_string_free (text, TRUE);
    json_node_unref (json);
  }
  free (lines);
  fuzz_drop_error (&err);
  if (gpunet_arch_parse ((const char *) data, size, "fuzz.json", &arch, &err) == GPUNET_OK)
    gpunet_arch_free (arch);
  fuzz_drop_error (&err);
  return 0;
}
