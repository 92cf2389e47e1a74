/* ew(x, t) stands for exp(x - t), the only form in which the online softmax uses exp. These four facts are all the
 * proofs of wp_osm know about it; proofs/wp_ew proves each of them from the textbook axioms of exp, so they are
 * sound. (The absolute form exp(a + b) = exp(a) exp(b) sends Z3 into a matching loop; the relative form does not.) */
#ifndef FR_PROOFS_EW_H
#define FR_PROOFS_EW_H
/*@ axiomatic Ew {
      logic real ew(real x, real t);
      axiom ew_pos:   \forall real x, t; ew(x, t) > 0;
      axiom ew_refl:  \forall real x; ew(x, x) == 1;
      axiom ew_le1:   \forall real x, t; x <= t ==> ew(x, t) <= 1;
      axiom ew_trans: \forall real x, t, u; ew(x, t) * ew(t, u) == ew(x, u);
    }
*/
#endif
