/* Checked cJSON building (json_checked.h). This file calls the real functions: it does not include the header's
 * redefinitions. */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

void fr_json_clear(void);
bool fr_json_failed(void);
cJSON *fr_json_made(cJSON *item);
cJSON_bool fr_json_add(cJSON *obj, const char *key, cJSON *item);
cJSON *fr_json_add_new(cJSON *obj, const char *key, cJSON *item);

static _Thread_local bool tl_failed;

void fr_json_clear(void) { tl_failed = false; }
bool fr_json_failed(void) { return tl_failed; }

cJSON *fr_json_made(cJSON *item) {
    if (!item) tl_failed = true;
    return item;
}

cJSON_bool fr_json_add(cJSON *obj, const char *key, cJSON *item) {
    if (!item) {
        tl_failed = true;
        return 0;
    }
    cJSON_bool ok = obj && (key ? cJSON_AddItemToObject(obj, key, item) : cJSON_AddItemToArray(obj, item));
    if (!ok) {
        tl_failed = true;
        cJSON_Delete(item);
    }
    return ok;
}

cJSON *fr_json_add_new(cJSON *obj, const char *key, cJSON *item) { return fr_json_add(obj, key, item) ? item : NULL; }
