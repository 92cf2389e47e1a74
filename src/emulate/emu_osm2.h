/* The proved online-softmax state of core/osm.h instantiated a second time for base 2: the same template with
 * exp2 for the rescale factor (GPU kernels fold log2(e) into the scale). In a header so that the unused members of
 * the template are not warned about. */
#ifndef FR_EMULATE_EMU_OSM2_H
#define FR_EMULATE_EMU_OSM2_H

#include "core/osm.h"

#define FR_OSM_EXP_e2f32(x) exp2f(x)
#define FR_OSM_EXP_e2f64(x) exp2(x)
FR_OSM_DEFINE(e2f32, float, FLT_MAX)
FR_OSM_DEFINE(e2f64, double, DBL_MAX)

#endif
