/* cJSON's building calls, checked (include after <cjson/cJSON.h>, in a file that writes JSON). cJSON's add functions
 * report a failed allocation only through their return value, and an item whose key could not be copied is neither
 * added nor freed: unchecked, an allocation failure leaves a field silently missing from a report and leaks. Here the
 * add and create calls are redefined to record any failure in a per-thread flag (and to free an item they could not
 * add); a writer clears the flag before it builds and answers FR_E_NOMEM when fr_json_failed() says so afterwards.
 * Per thread, so concurrent writers do not see each other's failures. */
#ifndef FR_IO_JSON_CHECKED_H
#define FR_IO_JSON_CHECKED_H

#include <cjson/cJSON.h>
#include <stdbool.h>

void fr_json_clear(void);
bool fr_json_failed(void);
cJSON *fr_json_made(cJSON *item); /* a created item: NULL is recorded */
cJSON_bool fr_json_add(cJSON *obj, const char *key, cJSON *item); /* key NULL: append to the array obj */
cJSON *fr_json_add_new(cJSON *obj, const char *key, cJSON *item); /* the same, returning item (NULL on failure) */

#define cJSON_CreateObject() fr_json_made(cJSON_CreateObject())
#define cJSON_CreateArray() fr_json_made(cJSON_CreateArray())
#define cJSON_CreateNumber(v) fr_json_made(cJSON_CreateNumber(v))
#define cJSON_CreateString(s) fr_json_made(cJSON_CreateString(s))
#define cJSON_CreateBool(b) fr_json_made(cJSON_CreateBool(b))
#define cJSON_CreateNull() fr_json_made(cJSON_CreateNull())
#define cJSON_AddItemToObject(o, k, i) fr_json_add((o), (k), (i))
#define cJSON_AddItemToArray(a, i) fr_json_add((a), NULL, (i))
#define cJSON_AddStringToObject(o, k, s) fr_json_add_new((o), (k), cJSON_CreateString(s))
#define cJSON_AddNumberToObject(o, k, v) fr_json_add_new((o), (k), cJSON_CreateNumber(v))
#define cJSON_AddBoolToObject(o, k, b) fr_json_add_new((o), (k), cJSON_CreateBool(b))
#define cJSON_AddNullToObject(o, k) fr_json_add_new((o), (k), cJSON_CreateNull())
#define cJSON_AddObjectToObject(o, k) fr_json_add_new((o), (k), cJSON_CreateObject())
#define cJSON_AddArrayToObject(o, k) fr_json_add_new((o), (k), cJSON_CreateArray())

#endif
