/* Soundness of proofs/wp_osm/ew.h: with exp given only by its textbook axioms (positive, exp(0) = 1, exp(a + b) =
 * exp(a) exp(b), increasing) and ew(x, t) defined as exp(x - t), each axiom of ew.h is a lemma WP proves here. */
/*@ axiomatic Exp {
      logic real e(real x);
      axiom e_pos:  \forall real x; e(x) > 0;
      axiom e_zero: e(0.0) == 1.0;
      axiom e_add:  \forall real a, b; e(a + b) == e(a) * e(b);
      axiom e_mono: \forall real a, b; a <= b ==> e(a) <= e(b);
    }
    logic real ew(real x, real t) = e(x - t);

    lemma ew_pos:   \forall real x, t; ew(x, t) > 0;
    lemma ew_refl:  \forall real x; ew(x, x) == 1;
    lemma ew_le1:   \forall real x, t; x <= t ==> ew(x, t) <= 1;
    lemma ew_trans_split: \forall real x, t, u; e((x - t) + (t - u)) == e(x - t) * e(t - u);
    lemma ew_trans: \forall real x, t, u; ew(x, t) * ew(t, u) == ew(x, u);

*/
