/* Logic shared by the proofs of proofs/wp_osm and proofs/wp_merge: the merge of two online-softmax states over the
 * reals: the new reference max Mm of two states. */
#ifndef FR_PROOFS_OSM_LOGIC_H
#define FR_PROOFS_OSM_LOGIC_H
#include "ew.h"
/*@ logic real rmax(real x, real y) = x >= y ? x : y;
    logic real Mm(real am, real bm) = rmax(am, bm);
*/
#endif
