(** Rounding-error invariant of the online softmax (proofs/round, README there).

    Everything here is over the reals with an abstract rounding [rnd] that obeys the standard model with
    underflow (|rnd x - x| <= u |x| + eta, exact relative error for the sum of two floats); Fp.v instantiates it
    with Flocq's IEEE binary32 / binary64 round-to-nearest-even and discharges every hypothesis of this section
    except the exp hypotheses, which are measured (tests/exhaustive/exhaustive_exp.c).

    A computed quantity s over a list of keys (x, y) with reference max m is described by [Inv]:
        s = sum_j exp(x_j - m) * y_j * r_j  +  a,
    with each key's factor r_j in [lo c k q D_j, hi c k q D_j], D_j = m - x_j, and |a| <= Ab (absolute part:
    underflow and the exp's absolute floor). c counts roundings, k rescale exps, q leaf errors on the path of a
    key; the exp (u D) factor is the rounding of the exp arguments, which telescopes along rescales. *)
From Coq Require Import Reals Psatz List Lia Permutation.
Import ListNotations.
Open Scope R_scope.

(** ** Small facts about powers and exp *)

Lemma pow_mono_ge1 : forall x a b, 1 <= x -> (a <= b)%nat -> x ^ a <= x ^ b.
Proof. intros; apply Rle_pow; auto. Qed.

Lemma pow_anti_le1 : forall x a b, 0 <= x <= 1 -> (a <= b)%nat -> x ^ b <= x ^ a.
Proof.
  intros x a b Hx Hab. replace b with (a + (b - a))%nat by lia. rewrite pow_add.
  assert (0 <= x ^ a) by (apply pow_le; lra).
  assert (0 <= x ^ (b - a) <= 1).
  { split; [apply pow_le; lra|]. induction (b - a)%nat; simpl; [lra|]. assert (0 <= x ^ n) by (apply pow_le; lra). nra. }
  nra.
Qed.

Lemma pow_ge1 : forall x a, 1 <= x -> 1 <= x ^ a.
Proof. intros. replace 1 with (x ^ 0) by (simpl; lra). apply pow_mono_ge1; auto; lia. Qed.

Lemma pow_pos01 : forall x a, 0 <= x <= 1 -> 0 <= x ^ a <= 1.
Proof.
  intros x a Hx; split; [apply pow_le; lra|]. replace 1 with (x ^ 0) by (simpl; lra). apply pow_anti_le1; auto; lia.
Qed.

Lemma exp_mono : forall a b, a <= b -> exp a <= exp b.
Proof. intros a b H. destruct (Req_dec a b) as [->|]; [lra|]. left; apply exp_increasing; lra. Qed.

Lemma exp_ge1 : forall a, 0 <= a -> 1 <= exp a.
Proof. intros. rewrite <- exp_0. now apply exp_mono. Qed.

Lemma exp_le1 : forall a, a <= 0 -> exp a <= 1.
Proof. intros. rewrite <- exp_0. now apply exp_mono. Qed.

Lemma abs_le_inv : forall x a, Rabs x <= a -> - a <= x <= a.
Proof. intros x a H. unfold Rabs in H. destruct (Rcase_abs x); lra. Qed.

Lemma F2len : forall (A B : Type) (Q : A -> B -> Prop) l l', Forall2 Q l l' -> length l = length l'.
Proof. intros A B Q l l' H. induction H; simpl; auto. Qed.

Lemma Forall2_impl : forall (A B : Type) (Q Q' : A -> B -> Prop) l l', (forall a b, Q a b -> Q' a b) ->
  Forall2 Q l l' -> Forall2 Q' l l'.
Proof. intros A B Q Q' l l' H H2. induction H2; constructor; auto. Qed.

Lemma Forall_perm : forall (A : Type) (Q : A -> Prop) l l', Permutation l l' -> Forall Q l -> Forall Q l'.
Proof.
  intros A Q l l' Hp H. rewrite Forall_forall in *. intros x Hx. apply H.
  apply (Permutation_in x (Permutation_sym Hp) Hx).
Qed.

(** An error |t| <= e E + h splits into a relative part th E (|th| <= e) and an absolute part (|a| <= h). *)
Lemma split_err : forall t E e h, 0 < E -> 0 <= e -> 0 <= h -> Rabs t <= e * E + h ->
  exists th a, Rabs th <= e /\ Rabs a <= h /\ t = th * E + a.
Proof.
  intros t E e h HE He Hh Ht.
  destruct (Rle_dec (Rabs t) (e * E)) as [Hs|Hs].
  - exists (t / E), 0. split; [|split].
    + unfold Rdiv. rewrite Rabs_mult, Rabs_inv, (Rabs_right E) by lra.
      apply Rmult_le_reg_r with E; auto. rewrite Rmult_assoc, Rinv_l by lra. lra.
    + rewrite Rabs_R0. lra.
    + field; lra.
  - destruct (Rle_dec 0 t) as [Hp|Hn].
    + exists e, (t - e * E). rewrite Rabs_right in Hs, Ht by lra.
      split; [rewrite Rabs_right; lra|split; [rewrite Rabs_right; lra|ring]].
    + exists (- e), (t + e * E). rewrite Rabs_left in Hs, Ht by lra.
      split; [rewrite Rabs_Ropp, Rabs_right; lra|split; [rewrite Rabs_left1; lra|ring]].
Qed.

Section Model.

Variables u eta : R.          (* unit roundoff, half the smallest subnormal *)
Variable rnd : R -> R.        (* round to nearest *)
Variable F : R -> Prop.       (* the float format *)

Hypothesis u_rng : 0 <= u <= / 16.
Hypothesis eta_pos : 0 <= eta.
Hypothesis rnd_model : forall x, exists d e, Rabs d <= u /\ Rabs e <= eta /\ rnd x = x * (1 + d) + e.
Hypothesis rnd_plus : forall a b, F a -> F b -> exists d, Rabs d <= u /\ rnd (a + b) = (a + b) * (1 + d).
Hypothesis F_opp : forall x, F x -> F (- x).
Hypothesis F_rnd : forall x, F (rnd x).
Hypothesis rnd_opp : forall x, rnd (- x) = - rnd x.

(** A weight function w x m (the code's exp(x - m) for x <= m, possibly rounded further) is good with relative error
    e and absolute floor h when it is exp(x - m) r + a, r within (1 +- e) exp(+- u (m - x)), |a| <= h. *)
Definition weight_ok (w : R -> R -> R) (e h : R) : Prop :=
  forall x m, F x -> F m -> x <= m ->
  exists r a, (1 - e) * exp (- (u * (m - x))) <= r <= (1 + e) * exp (u * (m - x)) /\ Rabs a <= h /\
              w x m = exp (x - m) * r + a.

(** The exp hypothesis: for every float z <= 0, |expc z - exp z| <= e exp z + h. *)
Definition exp_ok (expc : R -> R) (e h : R) : Prop :=
  forall z, F z -> z <= 0 -> Rabs (expc z - exp z) <= e * exp z + h.

(** The code's exp of the rounded difference: expc (rnd (x - m)). *)
Lemma weight_exp : forall expc e h, 0 <= e <= 1 -> 0 <= h -> exp_ok expc e h ->
  weight_ok (fun x m => expc (rnd (x - m))) e h.
Proof.
  intros expc e h He Hh Hexp x m Fx Fm Hxm.
  destruct (rnd_plus x (- m) Fx (F_opp m Fm)) as [d [Hd Hr]].
  replace (x + - m) with (x - m) in Hr by ring.
  set (z := (x - m) * (1 + d)).
  assert (Hz : z <= 0) by (unfold z; apply abs_le_inv in Hd; nra).
  assert (Fz : F (rnd (x - m))) by apply F_rnd.
  rewrite Hr in Fz |- *. fold z in Fz |- *.
  specialize (Hexp z Fz Hz).
  destruct (split_err (expc z - exp z) (exp z) e h (exp_pos z) (proj1 He) Hh Hexp) as [th [a [Hth [Ha Ht]]]].
  exists (exp ((x - m) * d) * (1 + th)), a.
  assert (Hez : exp z = exp (x - m) * exp ((x - m) * d)) by (unfold z; rewrite <- exp_plus; f_equal; ring).
  assert (Hd' : - (u * (m - x)) <= (x - m) * d <= u * (m - x)).
  { apply abs_le_inv in Hd. split; nra. }
  assert (exp (- (u * (m - x))) <= exp ((x - m) * d) <= exp (u * (m - x))) by (split; apply exp_mono; lra).
  assert (0 < exp ((x - m) * d)) by apply exp_pos.
  apply abs_le_inv in Hth.
  split; [split; nra|split; auto].
  rewrite Hez in Ht. lra.
Qed.

(** A weight rounded once more (P rounded to the input dtype: unit roundoff up, floor hp) is still good. *)
Lemma weight_round : forall w e h (rp : R -> R) up hp, 0 <= e <= 1 -> 0 <= up <= 1 ->
  (forall x, exists d a, Rabs d <= up /\ Rabs a <= hp /\ rp x = x * (1 + d) + a) ->
  weight_ok w e h -> weight_ok (fun x m => rp (w x m)) ((1 + e) * (1 + up) - 1) (h * (1 + up) + hp).
Proof.
  intros w e h rp up hp He Hup Hrp Hw x m Fx Fm Hxm.
  destruct (Hw x m Fx Fm Hxm) as [r [a [Hr [Ha Hwe]]]].
  destruct (Hrp (w x m)) as [d [b [Hd [Hb Hrd]]]].
  exists (r * (1 + d)), (a * (1 + d) + b).
  apply abs_le_inv in Hd.
  assert (0 < exp (- (u * (m - x)))) by apply exp_pos.
  assert (0 <= r) by nra.
  split; [split|split].
  - apply Rle_trans with ((1 - e) * exp (- (u * (m - x))) * (1 - up)); [|nra].
    assert (1 - ((1 + e) * (1 + up) - 1) <= (1 - e) * (1 - up)) by nra. nra.
  - replace ((1 + ((1 + e) * (1 + up) - 1))) with ((1 + e) * (1 + up)) by ring. nra.
  - apply Rle_trans with (Rabs (a * (1 + d)) + Rabs b); [apply Rabs_triang|].
    rewrite Rabs_mult. assert (Rabs (1 + d) <= 1 + up) by (apply Rabs_le; lra).
    assert (0 <= Rabs a) by apply Rabs_pos. nra.
  - rewrite Hrd, Hwe. ring.
Qed.

(** ** The invariant *)

Variables ea : R.   (* relative error of the rescale exp *)
Hypothesis ea_rng : 0 <= ea <= / 16.

Definition P (eq : R) (c k q : nat) : R := (1 + u) ^ c * (1 + ea) ^ k * (1 + eq) ^ q.
Definition hi (eq : R) (c k q : nat) (D : R) : R := P eq c k q * exp (u * D).
Definition lo (eq : R) (c k q : nat) (D : R) : R := (1 - u) ^ c * (1 - ea) ^ k * (1 - eq) ^ q * exp (- (u * D)).

Fixpoint wsum (m : R) (ks : list (R * R)) (rs : list R) : R :=
  match ks, rs with
  | (x, y) :: ks', r :: rs' => exp (x - m) * y * r + wsum m ks' rs'
  | _, _ => 0
  end.

Definition Inv (eq : R) (s : R) (ks : list (R * R)) (m : R) (c k q : nat) (A : R) : Prop :=
  Forall (fun kv => F (fst kv) /\ fst kv <= m) ks /\
  exists rs, Forall2 (fun r kv => lo eq c k q (m - fst kv) <= r <= hi eq c k q (m - fst kv)) rs ks /\
             Rabs (s - wsum m ks rs) <= A.

Section Eq.
Variable eq : R.
Hypothesis eq_rng : 0 <= eq <= / 4.

Lemma P_ge1 : forall c k q, 1 <= P eq c k q.
Proof.
  intros. unfold P. assert (1 <= (1 + u) ^ c) by (apply pow_ge1; lra).
  assert (1 <= (1 + ea) ^ k) by (apply pow_ge1; lra). assert (1 <= (1 + eq) ^ q) by (apply pow_ge1; lra).
  assert (1 <= (1 + u) ^ c * (1 + ea) ^ k) by nra. nra.
Qed.

Lemma P_mono : forall c k q c' k' q', (c <= c')%nat -> (k <= k')%nat -> (q <= q')%nat -> P eq c k q <= P eq c' k' q'.
Proof.
  intros. unfold P.
  assert (1 <= (1 + u) ^ c) by (apply pow_ge1; lra). assert (1 <= (1 + ea) ^ k) by (apply pow_ge1; lra).
  assert (1 <= (1 + eq) ^ q) by (apply pow_ge1; lra).
  assert ((1 + u) ^ c <= (1 + u) ^ c') by (apply pow_mono_ge1; auto; lra).
  assert ((1 + ea) ^ k <= (1 + ea) ^ k') by (apply pow_mono_ge1; auto; lra).
  assert ((1 + eq) ^ q <= (1 + eq) ^ q') by (apply pow_mono_ge1; auto; lra).
  apply Rmult_le_compat; [nra|lra|apply Rmult_le_compat; lra|lra].
Qed.

Lemma lo_pos : forall c k q D, 0 <= lo eq c k q D.
Proof.
  intros. unfold lo. assert (0 <= (1 - u) ^ c) by (apply pow_le; lra). assert (0 <= (1 - ea) ^ k) by (apply pow_le; lra).
  assert (0 <= (1 - eq) ^ q) by (apply pow_le; lra). assert (0 < exp (- (u * D))) by apply exp_pos.
  repeat apply Rmult_le_pos; lra.
Qed.

Lemma lo_anti : forall c k q c' k' q' D, (c <= c')%nat -> (k <= k')%nat -> (q <= q')%nat ->
  lo eq c' k' q' D <= lo eq c k q D.
Proof.
  intros. unfold lo.
  assert (0 <= (1 - u) ^ c' <= (1 - u) ^ c) by (split; [apply pow_le; lra|apply pow_anti_le1; auto; lra]).
  assert (0 <= (1 - ea) ^ k' <= (1 - ea) ^ k) by (split; [apply pow_le; lra|apply pow_anti_le1; auto; lra]).
  assert (0 <= (1 - eq) ^ q' <= (1 - eq) ^ q) by (split; [apply pow_le; lra|apply pow_anti_le1; auto; lra]).
  assert (0 < exp (- (u * D))) by apply exp_pos.
  apply Rmult_le_compat_r; [lra|]. apply Rmult_le_compat; [nra|lra|apply Rmult_le_compat; lra|lra].
Qed.

Lemma hi_mono : forall c k q c' k' q' D, (c <= c')%nat -> (k <= k')%nat -> (q <= q')%nat ->
  hi eq c k q D <= hi eq c' k' q' D.
Proof.
  intros. unfold hi. apply Rmult_le_compat_r; [left; apply exp_pos|]. now apply P_mono.
Qed.

Lemma lo_D : forall c k q D D', D <= D' -> lo eq c k q D' <= lo eq c k q D.
Proof.
  intros. unfold lo. apply Rmult_le_compat_l.
  - assert (0 <= (1 - u) ^ c) by (apply pow_le; lra). assert (0 <= (1 - ea) ^ k) by (apply pow_le; lra).
    assert (0 <= (1 - eq) ^ q) by (apply pow_le; lra). repeat apply Rmult_le_pos; lra.
  - apply exp_mono. nra.
Qed.

Lemma hi_D : forall c k q D D', D <= D' -> hi eq c k q D <= hi eq c k q D'.
Proof.
  intros. unfold hi. apply Rmult_le_compat_l; [generalize (P_ge1 c k q); lra|]. apply exp_mono. nra.
Qed.

Lemma lo_le1 : forall c k q D, 0 <= D -> lo eq c k q D <= 1.
Proof.
  intros. unfold lo.
  assert (0 <= (1 - u) ^ c <= 1) by (apply pow_pos01; lra). assert (0 <= (1 - ea) ^ k <= 1) by (apply pow_pos01; lra).
  assert (0 <= (1 - eq) ^ q <= 1) by (apply pow_pos01; lra).
  assert (0 < exp (- (u * D)) <= 1) by (split; [apply exp_pos|apply exp_le1; nra]).
  assert (0 <= (1 - u) ^ c * (1 - ea) ^ k <= 1) by (split; nra).
  assert (0 <= (1 - u) ^ c * (1 - ea) ^ k * (1 - eq) ^ q <= 1) by (split; nra). nra.
Qed.

Lemma hi_ge1 : forall c k q D, 0 <= D -> 1 <= hi eq c k q D.
Proof.
  intros. unfold hi. generalize (P_ge1 c k q) (exp_ge1 (u * D) ltac:(nra)). nra.
Qed.

(** A key's weight times its factor never exceeds P: exp(-D) hi(D) = P exp(-(1-u) D) <= P. *)
Lemma w_hi_le_P : forall c k q D, 0 <= D -> exp (- D) * hi eq c k q D <= P eq c k q.
Proof.
  intros. unfold hi. rewrite (Rmult_comm (P _ _ _ _)), <- Rmult_assoc, <- exp_plus.
  assert (exp (- D + u * D) <= 1) by (apply exp_le1; nra). generalize (P_ge1 c k q). nra.
Qed.

Lemma wsum_app : forall m ks1 rs1 ks2 rs2, length rs1 = length ks1 ->
  wsum m (ks1 ++ ks2) (rs1 ++ rs2) = wsum m ks1 rs1 + wsum m ks2 rs2.
Proof.
  intros m ks1; induction ks1 as [|[x y] ks1 IH]; intros rs1 ks2 rs2 Hl; destruct rs1 as [|r rs1];
    simpl in *; try lra; try discriminate.
  rewrite IH by lia. ring.
Qed.

Lemma wsum_bound : forall m ks rs c k q Y,
  Forall (fun kv => fst kv <= m) ks -> (forall kv, In kv ks -> Rabs (snd kv) <= Y) ->
  Forall2 (fun r kv => lo eq c k q (m - fst kv) <= r <= hi eq c k q (m - fst kv)) rs ks ->
  Rabs (wsum m ks rs) <= INR (length ks) * Y * P eq c k q.
Proof.
  intros m ks rs c k q Y Hle HY H2. revert Hle HY. induction H2 as [|r [x y] rs ks Hr H2 IH]; intros Hle HY.
  - simpl. rewrite Rabs_R0. lra.
  - inversion Hle as [|kv0 ks0 H1 H3]; subst. simpl in H1.
    assert (HYy : Rabs y <= Y) by (apply (HY (x, y)); simpl; auto).
    assert (IH' := IH H3 (fun kv Hin => HY kv (or_intror Hin))). clear IH H2 HY.
    change (wsum m ((x, y) :: ks) (r :: rs)) with (exp (x - m) * y * r + wsum m ks rs).
    change (length ((x, y) :: ks)) with (S (length ks)).
    apply Rle_trans with (Rabs (exp (x - m) * y * r) + Rabs (wsum m ks rs)); [apply Rabs_triang|].
    assert (Hw : exp (x - m) * r <= P eq c k q).
    { replace (x - m) with (- (m - x)) by ring. apply Rle_trans with (exp (- (m - x)) * hi eq c k q (m - x)).
      - apply Rmult_le_compat_l; [left; apply exp_pos|simpl in Hr; lra].
      - apply w_hi_le_P; lra. }
    assert (0 <= r) by (generalize (lo_pos c k q (m - x)); simpl in Hr; lra).
    assert (0 < exp (x - m)) by apply exp_pos.
    replace (Rabs (exp (x - m) * y * r)) with (exp (x - m) * r * Rabs y)
      by (rewrite !Rabs_mult, (Rabs_right (exp _)), (Rabs_right r) by lra; ring).
    rewrite S_INR. generalize (Rabs_pos y) (P_ge1 c k q). intros. nra.
Qed.

Definition Inv_nil_l : forall m c k q, Inv eq 0 [] m c k q 0.
Proof. intros. split; [constructor|]. exists []. split; [constructor|]. simpl. rewrite Rminus_0_r, Rabs_R0. lra. Qed.

Lemma Inv_weaken : forall s ks m c k q A c' k' q' A', (c <= c')%nat -> (k <= k')%nat -> (q <= q')%nat -> A <= A' ->
  Inv eq s ks m c k q A -> Inv eq s ks m c' k' q' A'.
Proof.
  intros s ks m c k q A c' k' q' A' Hc Hk Hq HA [Hf [rs [H2 Ha]]]. split; auto. exists rs. split; [|lra].
  eapply Forall2_impl; [|exact H2]. intros r kv [H1 H3].
  generalize (lo_anti c k q c' k' q' (m - fst kv) Hc Hk Hq) (hi_mono c k q c' k' q' (m - fst kv) Hc Hk Hq). lra.
Qed.

Lemma Inv_add : forall s1 ks1 c1 k1 q1 A1 s2 ks2 c2 k2 q2 A2 m,
  Inv eq s1 ks1 m c1 k1 q1 A1 -> Inv eq s2 ks2 m c2 k2 q2 A2 ->
  Inv eq (s1 + s2) (ks1 ++ ks2) m (Nat.max c1 c2) (Nat.max k1 k2) (Nat.max q1 q2) (A1 + A2).
Proof.
  intros s1 ks1 c1 k1 q1 A1 s2 ks2 c2 k2 q2 A2 m H1 H2.
  apply (Inv_weaken _ _ _ _ _ _ _ (Nat.max c1 c2) (Nat.max k1 k2) (Nat.max q1 q2) A1) in H1; try lia; try lra.
  apply (Inv_weaken _ _ _ _ _ _ _ (Nat.max c1 c2) (Nat.max k1 k2) (Nat.max q1 q2) A2) in H2; try lia; try lra.
  destruct H1 as [Hf1 [rs1 [H21 Ha1]]], H2 as [Hf2 [rs2 [H22 Ha2]]].
  split; [apply Forall_app; auto|]. exists (rs1 ++ rs2). split; [apply Forall2_app; auto|].
  rewrite wsum_app by (eapply F2len; eauto).
  replace (s1 + s2 - (wsum m ks1 rs1 + wsum m ks2 rs2)) with ((s1 - wsum m ks1 rs1) + (s2 - wsum m ks2 rs2)) by ring.
  apply Rle_trans with (Rabs (s1 - wsum m ks1 rs1) + Rabs (s2 - wsum m ks2 rs2)); [apply Rabs_triang|lra].
Qed.

Lemma wsum_scale : forall m ks rs t, wsum m ks (map (fun r => r * t) rs) = wsum m ks rs * t.
Proof.
  intros m ks; induction ks as [|[x y] ks IH]; intros [|r rs] t; simpl; try ring. rewrite IH. ring.
Qed.

Lemma lo_S : forall c k q D, lo eq (S c) k q D = (1 - u) * lo eq c k q D.
Proof. intros. unfold lo. simpl. ring. Qed.
Lemma hi_S : forall c k q D, hi eq (S c) k q D = (1 + u) * hi eq c k q D.
Proof. intros. unfold hi, P. simpl. ring. Qed.

Lemma lo_Sk : forall c k q D d, lo eq c (S k) q (D + d) = lo eq c k q D * ((1 - ea) * exp (- (u * d))).
Proof.
  intros. unfold lo. replace (- (u * (D + d))) with (- (u * D) + - (u * d)) by ring. rewrite exp_plus. simpl. ring.
Qed.
Lemma hi_Sk : forall c k q D d, hi eq c (S k) q (D + d) = hi eq c k q D * ((1 + ea) * exp (u * d)).
Proof. intros. unfold hi, P. replace (u * (D + d)) with (u * D + u * d) by ring. rewrite exp_plus. simpl. ring. Qed.

Lemma Inv_round : forall s ks m c k q A, Inv eq s ks m c k q A ->
  Inv eq (rnd s) ks m (S c) k q (A * (1 + u) + eta).
Proof.
  intros s ks m c k q A [Hf [rs [H2 Ha]]].
  destruct (rnd_model s) as [d [e [Hd [He Hr]]]].
  split; auto. exists (map (fun r => r * (1 + d)) rs). split.
  - apply abs_le_inv in Hd. clear Ha Hr Hf. induction H2 as [|r kv rs ks [H3 H4] H2 IH]; simpl; constructor.
    + rewrite lo_S, hi_S. generalize (lo_pos c k q (m - fst kv)). intros. split; nra.
    + exact IH.
  - rewrite wsum_scale, Hr.
    replace (s * (1 + d) + e - wsum m ks rs * (1 + d)) with ((s - wsum m ks rs) * (1 + d) + e) by ring.
    apply Rle_trans with (Rabs ((s - wsum m ks rs) * (1 + d)) + Rabs e); [apply Rabs_triang|].
    rewrite Rabs_mult. assert (Rabs (1 + d) <= 1 + u) by (apply abs_le_inv in Hd; apply Rabs_le; lra).
    assert (0 <= Rabs (s - wsum m ks rs)) by apply Rabs_pos. nra.
Qed.

(** Rescale by the code's exp of the rounded difference of two references m <= m' (osm.h update / merge,
    golden_fwd.c's alpha). The absolute part picks up |s| times the exp's floor. *)
Lemma Inv_scale : forall expc h s ks m m' c k q A Y, 0 <= h -> exp_ok expc ea h -> F m -> F m' -> m <= m' ->
  (forall kv, In kv ks -> Rabs (snd kv) <= Y) ->
  Inv eq s ks m c k q A ->
  Inv eq (s * expc (rnd (m - m'))) ks m' c (S k) q (A * (1 + ea) + (INR (length ks) * Y * P eq c k q + A) * h).
Proof.
  intros expc h s ks m m' c k q A Y Hh Hexp Fm Fm' Hmm HY [Hf [rs [H2 Ha]]].
  destruct (weight_exp expc ea h ltac:(lra) Hh Hexp m m' Fm Fm' Hmm) as [ra [a [Hra [Hah Hw]]]].
  assert (Hs : Rabs s <= INR (length ks) * Y * P eq c k q + A).
  { assert (Rabs (wsum m ks rs) <= INR (length ks) * Y * P eq c k q).
    { apply wsum_bound; auto. eapply Forall_impl; [|exact Hf]. simpl; tauto. }
    replace s with ((s - wsum m ks rs) + wsum m ks rs) by ring.
    apply Rle_trans with (Rabs (s - wsum m ks rs) + Rabs (wsum m ks rs)); [apply Rabs_triang|lra]. }
  split.
  - eapply Forall_impl; [|exact Hf]. simpl. intros kv [? ?]; split; auto; lra.
  - exists (map (fun r => r * ra) rs). split.
    + clear Ha Hs HY. induction H2 as [|r [x y] rs ks [H3 H4] H2 IH]; simpl; constructor.
      * inversion Hf; subst. simpl in *. destruct H1 as [_ Hxm].
        replace (m' - x) with ((m - x) + (m' - m)) by ring. rewrite lo_Sk, hi_Sk.
        assert (0 <= lo eq c k q (m - x)) by apply lo_pos.
        assert (0 <= (1 - ea) * exp (- (u * (m' - m)))) by (generalize (exp_pos (- (u * (m' - m)))); nra).
        split; [apply Rmult_le_compat; lra|apply Rmult_le_compat; lra].
      * inversion Hf; subst. apply IH; auto.
    + rewrite wsum_scale. rewrite Hw.
      assert (Hws : wsum m' ks rs = wsum m ks rs * exp (m - m')).
      { clear. revert rs. induction ks as [|[x y] ks IH]; intros [|r rs]; simpl; try ring.
        rewrite IH. replace (x - m') with ((x - m) + (m - m')) by ring. rewrite exp_plus. ring. }
      assert (Hws' : wsum m' ks (map (fun r => r * ra) rs) = wsum m ks rs * exp (m - m') * ra).
      { rewrite wsum_scale, Hws. ring. }
      rewrite wsum_scale in Hws'. rewrite Hws'.
      replace (s * (exp (m - m') * ra + a) - wsum m ks rs * exp (m - m') * ra)
        with ((s - wsum m ks rs) * (exp (m - m') * ra) + s * a) by ring.
      apply Rle_trans with (Rabs ((s - wsum m ks rs) * (exp (m - m') * ra)) + Rabs (s * a)); [apply Rabs_triang|].
      assert (Hf1 : 0 <= exp (m - m') * ra <= 1 + ea).
      { assert (0 < exp (- (u * (m' - m)))) by apply exp_pos.
        split; [apply Rmult_le_pos; [left; apply exp_pos|nra]|].
        apply Rle_trans with (exp (m - m') * ((1 + ea) * exp (u * (m' - m))));
          [apply Rmult_le_compat_l; [left; apply exp_pos|lra]|].
        replace (exp (m - m') * ((1 + ea) * exp (u * (m' - m)))) with ((1 + ea) * exp ((m - m') + u * (m' - m)))
          by (rewrite exp_plus; ring).
        assert (exp (m - m' + u * (m' - m)) <= 1) by (apply exp_le1; nra). nra. }
      rewrite (Rabs_mult (s - wsum m ks rs)), (Rabs_mult s a), (Rabs_right (exp (m - m') * ra)) by lra.
      assert (0 <= Rabs (s - wsum m ks rs)) by apply Rabs_pos. assert (0 <= Rabs s) by apply Rabs_pos.
      assert (0 <= Rabs a) by apply Rabs_pos.
      apply Rplus_le_compat; [nra|]. apply Rmult_le_compat; auto.
Qed.

(** A leaf: one key with a good weight. *)
Lemma Inv_leaf : forall w h x m, weight_ok w eq h -> F x -> F m -> x <= m ->
  Inv eq (w x m) [(x, 1)] m 0 0 1 h.
Proof.
  intros w h x m Hw Fx Fm Hxm. destruct (Hw x m Fx Fm Hxm) as [r [a [Hr [Ha He]]]].
  split; [constructor; [simpl; auto|constructor]|].
  exists [r]. split; [constructor; [|constructor]|].
  - unfold lo, hi, P. simpl. lra.
  - simpl. rewrite He. replace (exp (x - m) * r + a - (exp (x - m) * 1 * r + 0)) with a by ring. auto.
Qed.

Lemma Inv_mul1 : forall s x m c k q A y, Inv eq s [(x, 1)] m c k q A -> Inv eq (s * y) [(x, y)] m c k q (A * Rabs y).
Proof.
  intros s x m c k q A y [Hf [rs [H2 Ha]]]. split.
  - inversion Hf; subst; constructor; auto.
  - exists rs. split.
    + inversion H2; subst. constructor; auto.
    + inversion H2 as [|r kv rs' ks' Hr H2' E1 E2]; subst. inversion H2'; subst. simpl in *.
      replace (s * y - (exp (x - m) * y * r + 0)) with ((s - (exp (x - m) * 1 * r + 0)) * y) by ring.
      rewrite Rabs_mult. apply Rmult_le_compat_r; [apply Rabs_pos|auto].
Qed.

(** Keys in another order (the l and o sums of a tile may visit them differently). *)
Lemma Forall2_perm : forall (Q : R -> R * R -> Prop) m ks ks', Permutation ks ks' -> forall rs, Forall2 Q rs ks ->
  exists rs', Forall2 Q rs' ks' /\ wsum m ks' rs' = wsum m ks rs.
Proof.
  intros Q m ks ks' Hp. induction Hp; intros rs H2.
  - exists rs. auto.
  - inversion H2; subst. destruct (IHHp _ H4) as [rs' [H2' Hw]]. exists (x0 :: rs'). split; [constructor; auto|].
    destruct x. simpl. rewrite Hw. auto.
  - inversion H2 as [|r1 kv1 rs1 ks1 H1 H2']; subst. inversion H2' as [|r2 kv2 rs2 ks2 H3 H4]; subst.
    exists (r2 :: r1 :: rs2). split; [repeat constructor; auto|]. destruct x, y. simpl. ring.
  - destruct (IHHp1 _ H2) as [rs1 [H21 Hw1]]. destruct (IHHp2 _ H21) as [rs2 [H22 Hw2]]. exists rs2. split; auto. lra.
Qed.

Lemma Inv_perm : forall s ks ks' m c k q A, Permutation ks ks' -> Inv eq s ks m c k q A -> Inv eq s ks' m c k q A.
Proof.
  intros s ks ks' m c k q A Hp [Hf [rs [H2 Ha]]]. split.
  - eapply Forall_perm; eauto.
  - destruct (Forall2_perm _ m ks ks' Hp rs H2) as [rs' [H2' Hw]]. exists rs'. split; auto. rewrite Hw; auto.
Qed.

(** ** A closed form for the absolute part: N G (c + k + q + 1) P over N keys *)

Variable G : R.
Hypothesis G_eta : eta <= G.

Definition Ab (N c k q : nat) : R := INR N * G * INR (c + k + q + 1) * P eq c k q.
Definition Inv2 s ks m c k q := Inv eq s ks m c k q (Ab (length ks) c k q).

Lemma P_S : forall c k q, P eq (S c) k q = (1 + u) * P eq c k q.
Proof. intros. unfold P. simpl. ring. Qed.
Lemma P_Sk : forall c k q, P eq c (S k) q = P eq c k q * (1 + ea).
Proof. intros. unfold P. simpl. ring. Qed.

Lemma G_pos : 0 <= G.
Proof. lra. Qed.

Lemma Ab_mono : forall N c k q c' k' q', (c <= c')%nat -> (k <= k')%nat -> (q <= q')%nat ->
  Ab N c k q <= Ab N c' k' q'.
Proof.
  intros. unfold Ab. assert (0 <= INR N) by apply pos_INR. generalize G_pos; intro.
  assert (INR (c + k + q + 1) <= INR (c' + k' + q' + 1)) by (apply le_INR; lia).
  assert (0 <= INR (c + k + q + 1)) by apply pos_INR.
  assert (P eq c k q <= P eq c' k' q') by (apply P_mono; auto). generalize (P_ge1 c k q); intro.
  assert (0 <= INR N * G) by (apply Rmult_le_pos; lra).
  apply Rmult_le_compat; [apply Rmult_le_pos; lra|lra|apply Rmult_le_compat_l; lra|lra].
Qed.

Lemma Inv2_weaken : forall s ks m c k q c' k' q', (c <= c')%nat -> (k <= k')%nat -> (q <= q')%nat ->
  Inv2 s ks m c k q -> Inv2 s ks m c' k' q'.
Proof. intros. eapply Inv_weaken; eauto. now apply Ab_mono. Qed.

Lemma Inv2_add : forall s1 ks1 c1 k1 q1 s2 ks2 c2 k2 q2 m, Inv2 s1 ks1 m c1 k1 q1 -> Inv2 s2 ks2 m c2 k2 q2 ->
  Inv2 (s1 + s2) (ks1 ++ ks2) m (Nat.max c1 c2) (Nat.max k1 k2) (Nat.max q1 q2).
Proof.
  intros. unfold Inv2. eapply Inv_weaken; [| | | |eapply Inv_add; eauto]; auto.
  unfold Ab. rewrite app_length, (plus_INR (length ks1)).
  generalize (Ab_mono (length ks1) c1 k1 q1 (Nat.max c1 c2) (Nat.max k1 k2) (Nat.max q1 q2)
                      ltac:(lia) ltac:(lia) ltac:(lia))
             (Ab_mono (length ks2) c2 k2 q2 (Nat.max c1 c2) (Nat.max k1 k2) (Nat.max q1 q2)
                      ltac:(lia) ltac:(lia) ltac:(lia)).
  unfold Ab. intros. rewrite !Rmult_plus_distr_r. lra.
Qed.

Lemma Inv2_round : forall s ks m c k q, (1 <= length ks)%nat -> Inv2 s ks m c k q -> Inv2 (rnd s) ks m (S c) k q.
Proof.
  intros s ks m c k q HN H. unfold Inv2. eapply Inv_weaken; [| | | |apply Inv_round; exact H]; auto.
  unfold Ab. replace (S c + k + q + 1)%nat with ((c + k + q + 1) + 1)%nat by lia.
  rewrite (plus_INR (c + k + q + 1) 1). change (INR 1) with 1.
  rewrite P_S.
  assert (1 <= INR (length ks)) by (change 1 with (INR 1); apply le_INR; lia). generalize (P_ge1 c k q) G_pos; intros.
  assert (0 <= INR (c + k + q + 1)) by apply pos_INR.
  assert (Hx : 0 <= INR (length ks) * G * INR (c + k + q + 1) * P eq c k q).
  { apply Rmult_le_pos; [apply Rmult_le_pos; [apply Rmult_le_pos|]|]; lra. }
  assert (INR (length ks) * G * (1 + u) * P eq c k q >= eta).
  { assert (G <= INR (length ks) * G) by nra.
    assert (G * 1 <= G * ((1 + u) * P eq c k q)) by (apply Rmult_le_compat_l; nra). nra. }
  replace (INR (length ks) * G * (INR (c + k + q + 1) + 1) * ((1 + u) * P eq c k q))
    with (INR (length ks) * G * INR (c + k + q + 1) * P eq c k q * (1 + u) + INR (length ks) * G * (1 + u) * P eq c k q)
    by ring.
  lra.
Qed.

Lemma Inv2_scale : forall expc h s ks m m' c k q Y, 0 <= h -> 0 <= Y -> exp_ok expc ea h -> F m -> F m' -> m <= m' ->
  (forall kv, In kv ks -> Rabs (snd kv) <= Y) -> 2 * Y * h <= G -> 2 * INR (c + k + q + 1) * h <= 1 ->
  Inv2 s ks m c k q -> Inv2 (s * expc (rnd (m - m'))) ks m' c (S k) q.
Proof.
  intros expc h s ks m m' c k q Y Hh HY0 Hexp Fm Fm' Hmm HY HG Hc H. unfold Inv2.
  eapply Inv_weaken; [| | | |eapply (Inv_scale expc h s ks m m' c k q _ Y Hh Hexp Fm Fm' Hmm HY H)]; auto.
  unfold Ab. replace (c + S k + q + 1)%nat with ((c + k + q + 1) + 1)%nat by lia.
  rewrite (plus_INR (c + k + q + 1) 1). change (INR 1) with 1.
  rewrite P_Sk.
  generalize (P_ge1 c k q) G_pos (pos_INR (length ks)) (pos_INR (c + k + q + 1)); intros.
  set (N := INR (length ks)) in *. set (C := INR (c + k + q + 1)) in *. set (Pk := P eq c k q) in *.
  (* A (1 + ea) + (N Y P + A) h <= N G (C + 1) P (1 + ea), with A = N G C P *)
  assert (HNY : N * Y * Pk * h <= N * G * Pk / 2).
  { assert (Y * h <= G / 2) by lra. assert (0 <= N * Pk) by (apply Rmult_le_pos; lra).
    replace (N * Y * Pk * h) with ((N * Pk) * (Y * h)) by ring.
    replace (N * G * Pk / 2) with ((N * Pk) * (G / 2)) by (unfold Rdiv; ring). apply Rmult_le_compat_l; lra. }
  assert (HA : N * G * C * Pk * h <= N * G * Pk / 2).
  { assert (C * h <= / 2) by lra. assert (0 <= N * G * Pk) by (apply Rmult_le_pos; [apply Rmult_le_pos|]; lra).
    replace (N * G * C * Pk * h) with ((N * G * Pk) * (C * h)) by ring.
    replace (N * G * Pk / 2) with ((N * G * Pk) * / 2) by (unfold Rdiv; ring). apply Rmult_le_compat_l; lra. }
  assert (0 <= N * G * Pk) by (apply Rmult_le_pos; [apply Rmult_le_pos|]; lra).
  nra.
Qed.

Lemma Inv2_leaf : forall w h x m y, weight_ok w eq h -> F x -> F m -> x <= m -> Rabs y * h <= G -> h <= G ->
  Inv2 (w x m * y) [(x, y)] m 0 0 1.
Proof.
  intros w h x m y Hw Fx Fm Hxm Hy Hh. unfold Inv2.
  eapply Inv_weaken; [| | | |apply Inv_mul1; apply (Inv_leaf w h x m Hw Fx Fm Hxm)]; auto.
  unfold Ab, P. simpl. assert (0 <= G * eq) by (apply Rmult_le_pos; lra). nra.
Qed.

Lemma Inv2_perm : forall s ks ks' m c k q, Permutation ks ks' -> Inv2 s ks m c k q -> Inv2 s ks' m c k q.
Proof.
  intros s ks ks' m c k q Hp H. unfold Inv2 in *. rewrite <- (Permutation_length Hp). eapply Inv_perm; eauto.
Qed.

End Eq.

(** ** Summation trees: any order, fused or rounded products *)

Inductive tree := Lf (x y : R) (fused : bool) | Nd (a b : tree).

Fixpoint tkeys (t : tree) : list (R * R) := match t with Lf x y _ => [(x, y)] | Nd a b => tkeys a ++ tkeys b end.
Fixpoint tsize (t : tree) : nat := match t with Lf _ _ _ => 1 | Nd a b => tsize a + tsize b end.
Fixpoint tmax (t : tree) : R := match t with Lf x _ _ => x | Nd a b => Rmax (tmax a) (tmax b) end.
Definition lk (ks : list (R * R)) : list (R * R) := map (fun kv => (fst kv, 1)) ks.

(** l: the tile sum of the weights w x m; o: the tile's P.V column, each product fused (fma) or rounded. *)
Fixpoint tl_eval (w : R -> R -> R) (m : R) (t : tree) : R :=
  match t with Lf x _ _ => w x m | Nd a b => rnd (tl_eval w m a + tl_eval w m b) end.
Fixpoint to_eval (w : R -> R -> R) (m : R) (t : tree) : R :=
  match t with
  | Lf x y f => if f then w x m * y else rnd (w x m * y)
  | Nd a b => rnd (to_eval w m a + to_eval w m b)
  end.

Lemma tsize_pos : forall t, (1 <= tsize t)%nat.
Proof. induction t; simpl; lia. Qed.
Lemma tsize_len : forall t, length (tkeys t) = tsize t.
Proof. induction t; simpl; auto. rewrite app_length; lia. Qed.
Lemma lk_app : forall a b, lk (a ++ b) = lk a ++ lk b.
Proof. intros. unfold lk. apply map_app. Qed.
Lemma lk_len : forall ks, length (lk ks) = length ks.
Proof. intros. unfold lk. apply map_length. Qed.

Definition keys_ok (m : R) (ks : list (R * R)) := Forall (fun kv => F (fst kv) /\ fst kv <= m) ks.
Definition ys_le (Y : R) (ks : list (R * R)) := forall kv, In kv ks -> Rabs (snd kv) <= Y.

Lemma keys_ok_app : forall m a b, keys_ok m (a ++ b) <-> keys_ok m a /\ keys_ok m b.
Proof. intros. unfold keys_ok. apply Forall_app. Qed.

(** One side (l or one column of o): its leaf error eq, its absolute constant G. *)
Section Side.
Variables (eq G : R).
Hypothesis Heq : 0 <= eq <= / 4.
Hypothesis HG : eta <= G.

Lemma I_weaken : forall s ks m c k q c' k' q', (c <= c')%nat -> (k <= k')%nat -> (q <= q')%nat ->
  Inv2 eq G s ks m c k q -> Inv2 eq G s ks m c' k' q'.
Proof. apply Inv2_weaken; auto. Qed.
Lemma I_add : forall s1 ks1 c1 k1 q1 s2 ks2 c2 k2 q2 m, Inv2 eq G s1 ks1 m c1 k1 q1 -> Inv2 eq G s2 ks2 m c2 k2 q2 ->
  Inv2 eq G (s1 + s2) (ks1 ++ ks2) m (Nat.max c1 c2) (Nat.max k1 k2) (Nat.max q1 q2).
Proof. apply Inv2_add; auto. Qed.
Lemma I_round : forall s ks m c k q, (1 <= length ks)%nat -> Inv2 eq G s ks m c k q -> Inv2 eq G (rnd s) ks m (S c) k q.
Proof. apply Inv2_round; auto. Qed.

Lemma tl_inv : forall h w m t, h <= G -> weight_ok w eq h -> F m ->
  keys_ok m (tkeys t) -> Inv2 eq G (tl_eval w m t) (lk (tkeys t)) m (tsize t - 1) 0 1.
Proof.
  intros h w m t Hh Hw Fm. induction t as [x y f|a IHa b IHb]; intros Hk; simpl.
  - inversion Hk as [|kv ks [Fx Hx] _]; subst. simpl in *.
    replace (w x m) with (w x m * 1) by ring. eapply Inv2_leaf; eauto. rewrite Rabs_R1; lra.
  - apply keys_ok_app in Hk as [Ha Hb]. rewrite lk_app.
    assert (H := I_add _ _ _ _ _ _ _ _ _ _ _ (IHa Ha) (IHb Hb)).
    apply I_round in H; [|rewrite app_length, !lk_len, !tsize_len; generalize (tsize_pos a); lia].
    eapply I_weaken; [| | |exact H]; try lia. generalize (tsize_pos a) (tsize_pos b). lia.
Qed.

Lemma to_inv : forall h w m t Y, 0 <= h -> h <= G -> Y * h <= G -> weight_ok w eq h -> F m ->
  keys_ok m (tkeys t) -> ys_le Y (tkeys t) -> Inv2 eq G (to_eval w m t) (tkeys t) m (tsize t) 0 1.
Proof.
  intros h w m t Y Hh0 Hh HY Hw Fm. induction t as [x y f|a IHa b IHb]; intros Hk Hy; simpl.
  - inversion Hk as [|kv ks [Fx Hx] _]; subst. simpl in *.
    assert (Rabs y * h <= G).
    { assert (Rabs y <= Y) by (apply (Hy (x, y)); simpl; auto). nra. }
    assert (HL := Inv2_leaf eq Heq G HG w h x m y Hw Fx Fm Hx ltac:(auto) Hh).
    destruct f.
    + eapply I_weaken; [| | |exact HL]; lia.
    + apply I_round; auto.
  - apply keys_ok_app in Hk as [Ha Hb].
    assert (ys_le Y (tkeys a)) by (intros kv Hin; apply Hy; apply in_or_app; auto).
    assert (ys_le Y (tkeys b)) by (intros kv Hin; apply Hy; apply in_or_app; auto).
    assert (HS := I_add _ _ _ _ _ _ _ _ _ _ _ (IHa Ha ltac:(auto)) (IHb Hb ltac:(auto))).
    apply I_round in HS; [|rewrite app_length, !tsize_len; generalize (tsize_pos a); lia].
    eapply I_weaken; [| | |exact HS]; try lia. generalize (tsize_pos a) (tsize_pos b). lia.
Qed.

End Side.

(** ** The output: o / l against the exact softmax . v *)

Fixpoint esum (m : R) (ks : list (R * R)) : R :=
  match ks with [] => 0 | (x, _) :: ks' => exp (x - m) + esum m ks' end.
Fixpoint ysum (m : R) (ks : list (R * R)) : R :=
  match ks with [] => 0 | (x, y) :: ks' => exp (x - m) * y + ysum m ks' end.

Lemma esum_pos : forall m ks, 0 <= esum m ks.
Proof. intros m ks; induction ks as [|[x y] ks IH]; simpl; [lra|]. generalize (exp_pos (x - m)); lra. Qed.

Lemma esum_ge1 : forall m ks, (exists kv, In kv ks /\ fst kv = m) -> 1 <= esum m ks.
Proof.
  intros m ks [kv [Hin Hm]]. induction ks as [|[x y] ks IH]; simpl in *; [contradiction|].
  destruct Hin as [<-|Hin].
  - simpl in Hm. subst. rewrite Rminus_diag_eq, exp_0 by auto. generalize (esum_pos m ks). lra.
  - generalize (exp_pos (x - m)). specialize (IH Hin). lra.
Qed.

Lemma ysum_le : forall m ks V, (forall kv, In kv ks -> Rabs (snd kv) <= V) -> Rabs (ysum m ks) <= V * esum m ks.
Proof.
  intros m ks V H. induction ks as [|[x y] ks IH]; simpl.
  - rewrite Rabs_R0. lra.
  - assert (Rabs y <= V) by (apply (H (x, y)); simpl; auto).
    assert (IH' : Rabs (ysum m ks) <= V * esum m ks) by (apply IH; intros; apply H; simpl; auto).
    apply Rle_trans with (Rabs (exp (x - m) * y) + Rabs (ysum m ks)); [apply Rabs_triang|].
    rewrite Rabs_mult, Rabs_right by (apply Rle_ge, Rlt_le, exp_pos). generalize (exp_pos (x - m)). nra.
Qed.

Definition dev (eq : R) (c k q : nat) (R0 : R) := Rmax (hi eq c k q R0 - 1) (1 - lo eq c k q R0).

Lemma dev_bound : forall eq c k q R0 r D, 0 <= eq <= / 4 -> 0 <= D <= R0 ->
  lo eq c k q D <= r <= hi eq c k q D -> Rabs (r - 1) <= dev eq c k q R0.
Proof.
  intros eq c k q R0 r D Heq HD Hr. unfold dev.
  generalize (lo_D eq Heq c k q D R0 ltac:(lra)) (hi_D eq Heq c k q D R0 ltac:(lra)). intros.
  apply Rabs_le. split.
  - apply Rle_trans with (- (1 - lo eq c k q R0)); [apply Ropp_le_contravar, Rmax_r|lra].
  - apply Rle_trans with (hi eq c k q R0 - 1); [lra|apply Rmax_l].
Qed.

Lemma dev_l : forall eq c k q R0 m ks rs, 0 <= eq <= / 4 ->
  (forall kv, In kv ks -> 0 <= m - fst kv <= R0) ->
  Forall2 (fun r kv => lo eq c k q (m - fst kv) <= r <= hi eq c k q (m - fst kv)) rs (lk ks) ->
  Rabs (wsum m (lk ks) rs - esum m ks) <= dev eq c k q R0 * esum m ks.
Proof.
  intros eq c k q R0 m ks; induction ks as [|[x y] ks IH]; intros rs Heq HD H2;
    inversion H2 as [|r kv rs' ks' Hr H2']; subst.
  - simpl. rewrite Rminus_0_r, Rabs_R0. lra.
  - simpl. simpl in Hr.
    assert (Hx : 0 <= m - x <= R0) by (apply (HD (x, y)); simpl; auto).
    assert (Hd := dev_bound eq c k q R0 r (m - x) Heq Hx Hr).
    assert (IH' := IH rs' Heq (fun kv Hin => HD kv (or_intror Hin)) H2').
    replace (exp (x - m) * 1 * r + wsum m (lk ks) rs' - (exp (x - m) + esum m ks))
      with (exp (x - m) * (r - 1) + (wsum m (lk ks) rs' - esum m ks)) by ring.
    apply Rle_trans with (Rabs (exp (x - m) * (r - 1)) + Rabs (wsum m (lk ks) rs' - esum m ks)); [apply Rabs_triang|].
    rewrite Rabs_mult, (Rabs_right (exp _)) by (apply Rle_ge, Rlt_le, exp_pos). generalize (exp_pos (x - m)). nra.
Qed.

Lemma dev_o : forall eq c k q R0 m ks rs V, 0 <= eq <= / 4 ->
  (forall kv, In kv ks -> 0 <= m - fst kv <= R0 /\ Rabs (snd kv) <= V) ->
  Forall2 (fun r kv => lo eq c k q (m - fst kv) <= r <= hi eq c k q (m - fst kv)) rs ks ->
  Rabs (wsum m ks rs - ysum m ks) <= dev eq c k q R0 * V * esum m ks.
Proof.
  intros eq c k q R0 m ks; induction ks as [|[x y] ks IH]; intros rs V Heq HD H2;
    inversion H2 as [|r kv rs' ks' Hr H2']; subst.
  - simpl. rewrite Rminus_0_r, Rabs_R0. lra.
  - simpl. simpl in Hr.
    assert (Hx : 0 <= m - x <= R0 /\ Rabs y <= V) by (apply (HD (x, y)); simpl; auto).
    assert (Hd := dev_bound eq c k q R0 r (m - x) Heq (proj1 Hx) Hr).
    assert (IH' := IH rs' V Heq (fun kv Hin => HD kv (or_intror Hin)) H2').
    replace (exp (x - m) * y * r + wsum m ks rs' - (exp (x - m) * y + ysum m ks))
      with (exp (x - m) * y * (r - 1) + (wsum m ks rs' - ysum m ks)) by ring.
    apply Rle_trans with (Rabs (exp (x - m) * y * (r - 1)) + Rabs (wsum m ks rs' - ysum m ks)); [apply Rabs_triang|].
    rewrite !Rabs_mult, (Rabs_right (exp _)) by (apply Rle_ge, Rlt_le, exp_pos).
    assert (0 <= Rabs (r - 1)) by apply Rabs_pos. assert (0 <= Rabs y) by apply Rabs_pos.
    assert (Rabs y * Rabs (r - 1) <= V * dev eq c k q R0) by (apply Rmult_le_compat; lra).
    generalize (exp_pos (x - m)). intros. nra.
Qed.

(** The algebra of the last step: l within Th W + Al of W >= 1, o within Ph V W + Ao of Ys, |Ys| <= V W. *)
Lemma ratio_bound : forall l o W Ys V Th Ph Al Ao, 1 <= W -> 0 <= V -> 0 <= Th -> 0 <= Ph -> 0 <= Al -> 0 <= Ao ->
  Rabs (l - W) <= Th * W + Al -> Rabs (o - Ys) <= Ph * V * W + Ao -> Rabs Ys <= V * W -> Th + Al < 1 ->
  Rabs (o / l - Ys / W) <= (V * (Th + Ph) + Ao + V * Al) / (1 - Th - Al).
Proof.
  intros l o W Ys V Th Ph Al Ao HW HV HTh HPh HAl HAo Hel Heo Hys Hsm.
  set (Nn := V * (Th + Ph) + Ao + V * Al).
  assert (HlW : W * (1 - Th - Al) <= l).
  { apply abs_le_inv in Hel. assert (Al <= Al * W) by nra. nra. }
  assert (Hl0 : 0 < l) by nra.
  assert (Hnum : Rabs ((o - Ys) * W - Ys * (l - W)) <= W * W * Nn).
  { apply Rle_trans with (Rabs ((o - Ys) * W) + Rabs (Ys * (l - W))).
    { replace ((o - Ys) * W - Ys * (l - W)) with ((o - Ys) * W + - (Ys * (l - W))) by ring.
      rewrite <- (Rabs_Ropp (Ys * (l - W))). apply Rabs_triang. }
    rewrite !Rabs_mult, (Rabs_right W) by lra.
    assert (Rabs Ys * Rabs (l - W) <= V * W * (Th * W + Al)) by (apply Rmult_le_compat; try apply Rabs_pos; lra).
    assert (Rabs (o - Ys) * W <= (Ph * V * W + Ao) * W) by (apply Rmult_le_compat_r; lra).
    assert (0 <= V * Al) by (apply Rmult_le_pos; lra).
    assert (W * (Ao + V * Al) <= W * W * (Ao + V * Al)).
    { assert (0 <= W * (Ao + V * Al)) by (apply Rmult_le_pos; lra). nra. }
    unfold Nn. nra. }
  replace (o / l - Ys / W) with (((o - Ys) * W - Ys * (l - W)) / (l * W)) by (field; lra).
  unfold Rdiv at 1. rewrite Rabs_mult, Rabs_inv, (Rabs_right (l * W)) by nra.
  apply Rmult_le_reg_r with (l * W); [nra|].
  rewrite Rmult_assoc, Rinv_l by nra. rewrite Rmult_1_r.
  apply Rle_trans with (W * W * Nn); auto.
  unfold Rdiv. assert (0 <= Nn) by (unfold Nn; nra).
  assert (W * W * (1 - Th - Al) <= l * W) by nra.
  apply Rle_trans with (Nn * / (1 - Th - Al) * (W * W * (1 - Th - Al))).
  - right. field. lra.
  - apply Rmult_le_compat_l; [apply Rmult_le_pos; [lra|left; apply Rinv_0_lt_compat; lra]|lra].
Qed.

(** The final step: out = rnd (o / l) (kernels: o[d] / sm; golden: acc[d] / l). *)
Theorem final_div : forall eL eO cl kl ql Al co ko qo Ao ks m l o V R0,
  0 <= eL <= / 4 -> 0 <= eO <= / 4 ->
  Inv eL l (lk ks) m cl kl ql Al -> Inv eO o ks m co ko qo Ao ->
  (exists kv, In kv ks /\ fst kv = m) ->
  (forall kv, In kv ks -> m - fst kv <= R0 /\ Rabs (snd kv) <= V) ->
  dev eL cl kl ql R0 + Al < 1 ->
  Rabs (rnd (o / l) - ysum m ks / esum m ks) <=
    (1 + u) * ((V * (dev eL cl kl ql R0 + dev eO co ko qo R0) + Ao + V * Al) / (1 - dev eL cl kl ql R0 - Al))
    + u * V + eta.
Proof.
  intros eL eO cl kl ql Al co ko qo Ao ks m l o V R0 HeL HeO [Hfl [rl [Hl Hal]]] [Hfo [ro [Ho Hao]]] Hmax HD Hsm.
  set (Th := dev eL cl kl ql R0) in *. set (Ph := dev eO co ko qo R0) in *.
  set (W := esum m ks). set (Ys := ysum m ks).
  assert (HW : 1 <= W) by (apply esum_ge1; auto).
  assert (HD' : forall kv, In kv ks -> 0 <= m - fst kv <= R0 /\ Rabs (snd kv) <= V).
  { intros kv Hin. destruct (HD kv Hin) as [H1 H2]. split; [split|]; auto.
    assert (Hin' : In (fst kv, 1) (lk ks)) by (unfold lk; apply (in_map (fun kv => (fst kv, 1)) ks kv Hin)).
    rewrite Forall_forall in Hfo. destruct (Hfo kv Hin). lra. }
  destruct Hmax as [kv0 [Hin0 Hm0]]. destruct (HD' kv0 Hin0) as [[_ HR0] HV0].
  assert (0 <= R0) by (rewrite Hm0 in HR0; lra). assert (0 <= V) by (generalize (Rabs_pos (snd kv0)); lra).
  assert (Hdl := dev_l eL cl kl ql R0 m ks rl HeL (fun kv Hin => proj1 (HD' kv Hin)) Hl).
  assert (Hdo := dev_o eO co ko qo R0 m ks ro V HeO HD' Ho).
  assert (Hys := ysum_le m ks V (fun kv Hin => proj2 (HD' kv Hin))). fold W Ys Th Ph in Hdl, Hdo, Hys.
  assert (HTh : 0 <= Th) by (unfold Th, dev; apply Rle_trans with (hi eL cl kl ql R0 - 1);
    [generalize (hi_ge1 eL HeL cl kl ql R0 ltac:(lra)); lra|apply Rmax_l]).
  assert (HPh : 0 <= Ph) by (unfold Ph, dev; apply Rle_trans with (hi eO co ko qo R0 - 1);
    [generalize (hi_ge1 eO HeO co ko qo R0 ltac:(lra)); lra|apply Rmax_l]).
  assert (HAl : 0 <= Al) by (apply Rle_trans with (Rabs (l - wsum m (lk ks) rl)); [apply Rabs_pos|auto]).
  assert (HAo : 0 <= Ao) by (apply Rle_trans with (Rabs (o - wsum m ks ro)); [apply Rabs_pos|auto]).
  (* |l - W| <= Th W + Al, |o - Ys| <= Ph V W + Ao *)
  assert (Hel : Rabs (l - W) <= Th * W + Al).
  { replace (l - W) with ((l - wsum m (lk ks) rl) + (wsum m (lk ks) rl - W)) by ring.
    apply Rle_trans with (Rabs (l - wsum m (lk ks) rl) + Rabs (wsum m (lk ks) rl - W)); [apply Rabs_triang|lra]. }
  assert (Heo : Rabs (o - Ys) <= Ph * V * W + Ao).
  { replace (o - Ys) with ((o - wsum m ks ro) + (wsum m ks ro - Ys)) by ring.
    apply Rle_trans with (Rabs (o - wsum m ks ro) + Rabs (wsum m ks ro - Ys)); [apply Rabs_triang|lra]. }
  set (E := (V * (Th + Ph) + Ao + V * Al) / (1 - Th - Al)).
  assert (HE : Rabs (o / l - Ys / W) <= E) by (apply ratio_bound; auto).
  destruct (rnd_model (o / l)) as [d [e [Hd [He Hr]]]]. rewrite Hr.
  replace (o / l * (1 + d) + e - Ys / W) with ((o / l - Ys / W) * (1 + d) + (Ys / W) * d + e) by ring.
  assert (HYW : Rabs (Ys / W) <= V).
  { unfold Rdiv. rewrite Rabs_mult, Rabs_inv, (Rabs_right W) by lra.
    apply Rmult_le_reg_r with W; [lra|]. rewrite Rmult_assoc, Rinv_l by lra. lra. }
  apply Rle_trans with (Rabs ((o / l - Ys / W) * (1 + d)) + Rabs (Ys / W * d) + Rabs e);
    [eapply Rle_trans; [apply Rabs_triang|]; apply Rplus_le_compat_r; apply Rabs_triang|].
  rewrite !Rabs_mult. assert (Rabs (1 + d) <= 1 + u) by (apply abs_le_inv in Hd; apply Rabs_le; lra).
  assert (Rabs (Ys / W) * Rabs d <= V * u) by (apply Rmult_le_compat; try apply Rabs_pos; lra).
  assert (Rabs (o / l - Ys / W) * Rabs (1 + d) <= (1 + u) * E)
    by (rewrite Rmult_comm; apply Rmult_le_compat; try apply Rabs_pos; lra).
  unfold E in *. lra.
Qed.

(** The exact value is the softmax . y whatever the reference: exp (x - m) = exp x / exp m. *)
Lemma softmax_shift : forall m ks, ysum m ks / esum m ks = ysum 0 ks / esum 0 ks.
Proof.
  intros m ks.
  assert (He : esum m ks = esum 0 ks * exp (- m)).
  { induction ks as [|[x y] ks IH]; simpl; [ring|]. rewrite IH. replace (x - m) with ((x - 0) + - m) by ring.
    rewrite exp_plus. ring. }
  assert (Hy : ysum m ks = ysum 0 ks * exp (- m)).
  { clear He. induction ks as [|[x y] ks IH]; simpl; [ring|]. rewrite IH. replace (x - m) with ((x - 0) + - m) by ring.
    rewrite exp_plus. ring. }
  rewrite He, Hy. destruct (Req_dec (esum 0 ks) 0) as [Z|Z].
  - rewrite Z. unfold Rdiv. rewrite Rmult_0_l, Rinv_0. ring.
  - field. split; auto. generalize (exp_pos (- m)); lra.
Qed.

(** ** The scores' own error: softmax . v moves by at most 2 V (e^D - 1) / (2 - e^D) when every score moves by at
    most D (the verifier adds this for the GEMM's error on the scores, src/verify/judge/judge.c apriori_abs). *)

Lemma exp_dev : forall t D, Rabs t <= D -> Rabs (exp t - 1) <= exp D - 1.
Proof.
  intros t D H. apply abs_le_inv in H.
  destruct (Rle_dec 0 t) as [Ht|Ht].
  - assert (1 <= exp t) by (apply exp_ge1; lra). assert (exp t <= exp D) by (apply exp_mono; lra).
    rewrite Rabs_right by lra. lra.
  - assert (exp t <= 1) by (apply exp_le1; lra). rewrite Rabs_left1 by lra.
    assert (exp (- t) <= exp D) by (apply exp_mono; lra).
    assert (Hab : exp t * exp (- t) = 1) by (rewrite <- exp_plus; replace (t + - t) with 0 by ring; apply exp_0).
    assert (0 < exp t) by apply exp_pos. assert (0 < exp (- t)) by apply exp_pos.
    assert (exp t * (exp t + exp (- t) - 2) >= 0) by nra.
    assert (exp t + exp (- t) - 2 >= 0) by nra. lra.
Qed.

Lemma pert_sums : forall ks ks' m V D,
  Forall2 (fun kv kv' => snd kv' = snd kv /\ Rabs (fst kv' - fst kv) <= D) ks ks' ->
  (forall kv, In kv ks -> Rabs (snd kv) <= V) ->
  Rabs (esum m ks' - esum m ks) <= (exp D - 1) * esum m ks /\
  Rabs (ysum m ks' - ysum m ks) <= (exp D - 1) * V * esum m ks.
Proof.
  intros ks ks' m V D H2. induction H2 as [|[x y] [x' y'] ks ks' [Ey Hx] H2 IH]; intros HV; simpl in *.
  - rewrite Rminus_0_r, Rabs_R0. lra.
  - subst y'. destruct (IH (fun kv Hin => HV kv (or_intror Hin))) as [He Hy].
    assert (Hv : Rabs y <= V) by (apply (HV (x, y)); auto).
    assert (Hd := exp_dev (x' - x) D Hx).
    assert (Ex : exp (x' - m) = exp (x - m) * exp (x' - x)) by (rewrite <- exp_plus; f_equal; ring).
    assert (0 < exp (x - m)) by apply exp_pos.
    assert (Ht : Rabs (exp (x' - m) - exp (x - m)) <= exp (x - m) * (exp D - 1)).
    { rewrite Ex. replace (exp (x - m) * exp (x' - x) - exp (x - m)) with (exp (x - m) * (exp (x' - x) - 1)) by ring.
      rewrite Rabs_mult, (Rabs_right (exp (x - m))) by lra. apply Rmult_le_compat_l; lra. }
    split.
    + replace (exp (x' - m) + esum m ks' - (exp (x - m) + esum m ks))
        with ((exp (x' - m) - exp (x - m)) + (esum m ks' - esum m ks)) by ring.
      apply Rle_trans with (Rabs (exp (x' - m) - exp (x - m)) + Rabs (esum m ks' - esum m ks)); [apply Rabs_triang|].
      lra.
    + replace (exp (x' - m) * y + ysum m ks' - (exp (x - m) * y + ysum m ks))
        with ((exp (x' - m) - exp (x - m)) * y + (ysum m ks' - ysum m ks)) by ring.
      apply Rle_trans with (Rabs ((exp (x' - m) - exp (x - m)) * y) + Rabs (ysum m ks' - ysum m ks));
        [apply Rabs_triang|].
      rewrite Rabs_mult.
      assert (Rabs (exp (x' - m) - exp (x - m)) * Rabs y <= exp (x - m) * (exp D - 1) * V)
        by (apply Rmult_le_compat; try apply Rabs_pos; lra).
      lra.
Qed.

Theorem perturb : forall ks ks' m V D,
  Forall2 (fun kv kv' => snd kv' = snd kv /\ Rabs (fst kv' - fst kv) <= D) ks ks' ->
  (exists kv, In kv ks /\ fst kv = m) -> (forall kv, In kv ks -> fst kv <= m /\ Rabs (snd kv) <= V) ->
  0 <= D -> exp D < 2 ->
  Rabs (ysum 0 ks' / esum 0 ks' - ysum 0 ks / esum 0 ks) <= 2 * V * (exp D - 1) / (2 - exp D).
Proof.
  intros ks ks' m V D H2 Hmax HV HD HD2.
  rewrite <- (softmax_shift m ks'), <- (softmax_shift m ks).
  assert (HW : 1 <= esum m ks) by (apply esum_ge1; auto).
  destruct (pert_sums ks ks' m V D H2 (fun kv Hin => proj2 (HV kv Hin))) as [Hl Ho].
  assert (Hys := ysum_le m ks V (fun kv Hin => proj2 (HV kv Hin))).
  destruct Hmax as [kv0 [Hin0 _]]. assert (0 <= V) by (generalize (proj2 (HV kv0 Hin0)) (Rabs_pos (snd kv0)); lra).
  assert (1 <= exp D) by (apply exp_ge1; lra).
  apply Rle_trans with ((V * ((exp D - 1) + (exp D - 1)) + 0 + V * 0) / (1 - (exp D - 1) - 0)).
  - apply ratio_bound; try lra; rewrite Rmult_comm in Hl; lra.
  - right. field. lra.
Qed.

(** The final step from the two invariants (l over lk ks, o over ks, one leaf error each) to the bound on out. *)
Lemma inv_bound : forall eL eO GL GO cl kl co ko ks m l o V xlo xhi, 0 <= eL <= / 4 -> 0 <= eO <= / 4 ->
  Inv2 eL GL l (lk ks) m cl kl 1 -> Inv2 eO GO o ks m co ko 1 ->
  (exists kv, In kv ks /\ fst kv = m) -> (forall kv, In kv ks -> xlo <= fst kv <= xhi) -> ys_le V ks ->
  let n := length ks in
  let dl := dev eL cl kl 1 (xhi - xlo) in let dO := dev eO co ko 1 (xhi - xlo) in
  let Al := Ab eL GL n cl kl 1 in let Ao := Ab eO GO n co ko 1 in
  dl + Al < 1 ->
  Rabs (rnd (o / l) - ysum 0 ks / esum 0 ks) <= (1 + u) * ((V * (dl + dO) + Ao + V * Al) / (1 - dl - Al)) + u * V + eta.
Proof.
  intros eL eO GL GO cl kl co ko ks m l o V xlo xhi HeL HeO HL HO Hmax Hx Hy n dl dO Al Ao Hsm.
  unfold Inv2 in HL, HO. rewrite lk_len in HL. fold n in HL, HO.
  rewrite <- (softmax_shift m ks).
  apply (final_div eL eO _ _ _ _ _ _ _ _ ks m l o V (xhi - xlo) HeL HeO HL HO Hmax); auto.
  intros kv Hin. split; [|apply Hy; auto].
  destruct Hmax as [kv0 [Hin0 E0]]. generalize (Hx kv Hin) (Hx kv0 Hin0). lra.
Qed.

(** ** Tiles and their maxima *)

Lemma tmax_ge : forall t kv, In kv (tkeys t) -> fst kv <= tmax t.
Proof.
  induction t as [x y f|a IHa b IHb]; intros kv Hin; simpl in *.
  - destruct Hin as [<-|[]]. simpl. lra.
  - apply in_app_or in Hin as [H|H]; [apply Rle_trans with (tmax a); [auto|apply Rmax_l]|
                                       apply Rle_trans with (tmax b); [auto|apply Rmax_r]].
Qed.

Lemma tmax_in : forall t, exists kv, In kv (tkeys t) /\ fst kv = tmax t.
Proof.
  induction t as [x y f|a [kva [Ha Ea]] b [kvb [Hb Eb]]]; simpl.
  - exists (x, y). auto.
  - unfold Rmax. destruct (Rle_dec (tmax a) (tmax b)).
    + exists kvb. split; auto. apply in_or_app; auto.
    + exists kva. split; auto. apply in_or_app; auto.
Qed.

Definition tile := (tree * tree)%type.
Definition st := (R * R * R)%type.

(** A tile: an l tree and an o tree over the same keys (in any order); scores are floats, |v| <= V. *)
Definition tile_ok (V : R) (t : tile) := Permutation (lk (tkeys (fst t))) (lk (tkeys (snd t))) /\
  Forall (fun kv => F (fst kv)) (tkeys (snd t)) /\ ys_le V (tkeys (snd t)).

Lemma tile_F_max : forall V t, tile_ok V t -> F (tmax (snd t)).
Proof.
  intros V t [_ [HF _]]. destruct (tmax_in (snd t)) as [kv [Hin E]]. rewrite Forall_forall in HF.
  rewrite <- E. now apply HF.
Qed.

Lemma lk_in : forall ks x y, In (x, y) (lk ks) -> exists y', In (x, y') ks.
Proof.
  induction ks as [|[x0 y0] ks IH]; intros x y Hin; simpl in *; [contradiction|].
  destruct Hin as [E|Hin]; [inversion E; subst; exists y0; auto|]. destruct (IH x y Hin) as [y' H]. exists y'; auto.
Qed.

Lemma tile_keys_ok : forall V t m, tile_ok V t -> tmax (snd t) <= m ->
  keys_ok m (tkeys (fst t)) /\ keys_ok m (tkeys (snd t)).
Proof.
  intros V t m [Hp [HF _]] Hm. rewrite Forall_forall in HF. split; unfold keys_ok; rewrite Forall_forall.
  - intros [x y] Hin.
    assert (Hl : In (x, 1) (lk (tkeys (fst t)))) by (unfold lk; apply (in_map (fun kv => (fst kv, 1)) _ (x, y) Hin)).
    apply (Permutation_in _ Hp) in Hl. destruct (lk_in _ _ _ Hl) as [y' Hin'].
    split; [apply (HF (x, y') Hin')|]. apply Rle_trans with (tmax (snd t)); auto. apply (tmax_ge _ (x, y') Hin').
  - intros kv Hin. split; [auto|]. apply Rle_trans with (tmax (snd t)); auto. now apply tmax_ge.
Qed.

Lemma tile_size : forall V t, tile_ok V t -> tsize (fst t) = tsize (snd t).
Proof.
  intros V t [Hp _]. rewrite <- !tsize_len. apply Permutation_length in Hp. now rewrite !lk_len in Hp.
Qed.

Lemma ys_le1 : forall ks, ys_le 1 (lk ks).
Proof.
  intros ks kv Hin. unfold lk in Hin. apply in_map_iff in Hin as [kv' [<- _]]. simpl. rewrite Rabs_R1. lra.
Qed.

Lemma ys_le_app : forall V a b, ys_le V a -> ys_le V b -> ys_le V (a ++ b).
Proof. intros V a b Ha Hb kv Hin. apply in_app_or in Hin as [H|H]; auto. Qed.

Section Kernel.
(** core/osm.h driven as the fast kernels drive it (src/kernels/fwd.c fwd_subtile, one output column), with plain
    accumulation across tiles: per tile, update (the reference moves to the tile max when it is larger; l and o
    are rescaled by alpha = expA (- rnd (tile_max - m)) and rounded), then add_sum of the tile's sum of weights and
    o += the tile's P.V, each rounded. Tile sums and P.V in any order (trees). *)
Variables (eL eO GL GO hL hO hA V : R) (wL wO : R -> R -> R) (expA : R -> R) (Nmax : nat).
Hypotheses (HeL : 0 <= eL <= / 4) (HeO : 0 <= eO <= / 4) (HGL : eta <= GL) (HGO : eta <= GO).
Hypotheses (HhL : 0 <= hL) (HhO : 0 <= hO) (HhA : 0 <= hA) (HV : 0 <= V).
Hypotheses (HhLG : hL <= GL) (HhOG : hO <= GO) (HVhO : V * hO <= GO) (HhAL : 2 * 1 * hA <= GL) (HhAO : 2 * V * hA <= GO).
Hypotheses (HwL : weight_ok wL eL hL) (HwO : weight_ok wO eO hO) (HexpA : exp_ok expA ea hA).
Hypothesis Hcap : 2 * INR Nmax * hA <= 1.

Definition kinit (t : tile) : st :=
  let tm := tmax (snd t) in (tm, tl_eval wL tm (fst t), to_eval wO tm (snd t)).

(* The lines marked [mirror] are compared by proofs/prove.py with the contracts WP proves of osm.h's code
   (osm_shape.c): the same expression once every rnd is erased. *)
Definition kstep (s : st) (t : tile) : st :=
  let '(m, l, o) := s in
  let tm := tmax (snd t) in
  if Rlt_dec m tm then
    let a := expA (- rnd (tm - m)) in                  (* [mirror] update_alpha *)
    let l1 := rnd (l * a) in                           (* [mirror] update_l *)
    let l2 := rnd (l1 + tl_eval wL tm (fst t)) in      (* [mirror] add_sum *)
    (tm, l2, rnd (rnd (o * a) + to_eval wO tm (snd t)))
  else
    let l2 := rnd (l + tl_eval wL m (fst t)) in        (* [mirror] add_sum_stays *)
    (m, l2, rnd (o + to_eval wO m (snd t))).

Definition krun (t : tile) (ts : list tile) : st := fold_left kstep ts (kinit t).

Fixpoint rowkeys (ts : list tile) : list (R * R) := match ts with [] => [] | t :: ts' => tkeys (snd t) ++ rowkeys ts' end.

(** The state after i tiles over keys ks. *)
Definition KI (s : st) (ks : list (R * R)) (i : nat) : Prop :=
  let '(m, l, o) := s in
  F m /\ (exists kv, In kv ks /\ fst kv = m) /\ (forall kv, In kv ks -> fst kv <= m) /\ ys_le V ks /\
  (1 <= length ks)%nat /\ (1 <= i)%nat /\
  (exists c k, (c <= length ks + i - 2)%nat /\ (k <= i - 1)%nat /\ Inv2 eL GL l (lk ks) m c k 1) /\
  (exists c k, (c <= length ks + i - 1)%nat /\ (k <= i - 1)%nat /\ Inv2 eO GO o ks m c k 1).

Lemma cap_ok : forall c k q, (c + k + q + 1 <= Nmax)%nat -> 2 * INR (c + k + q + 1) * hA <= 1.
Proof. intros. apply Rle_trans with (2 * INR Nmax * hA); auto. apply le_INR in H. nra. Qed.

Lemma kinit_ok : forall t, tile_ok V t -> KI (kinit t) (tkeys (snd t)) 1.
Proof.
  intros t Ht. unfold kinit, KI. set (tm := tmax (snd t)).
  destruct (tile_keys_ok V t tm Ht (Rle_refl _)) as [Hkl Hko].
  assert (HT := tile_size V t Ht). destruct Ht as [Hp [HF Hy]].
  split; [apply (tile_F_max V t); split; auto|]. split; [apply tmax_in|]. split; [intros; now apply tmax_ge|].
  split; auto. split; [rewrite tsize_len; apply tsize_pos|]. split; [lia|]. split.
  - exists (tsize (fst t) - 1)%nat, 0%nat. split; [rewrite tsize_len; lia|]. split; [lia|].
    apply Inv2_perm with (lk (tkeys (fst t))); auto. apply (tl_inv eL GL HeL HGL hL); auto.
    apply (tile_F_max V t); split; auto.
  - exists (tsize (snd t)), 0%nat. split; [rewrite tsize_len; lia|]. split; [lia|].
    apply (to_inv eO GO HeO HGO hO wO tm (snd t) V); auto. apply (tile_F_max V t); split; auto.
Qed.

Lemma kstep_ok : forall s ks i t, tile_ok V t -> KI s ks i -> (length ks + tsize (snd t) + 2 * i + 2 <= Nmax)%nat ->
  KI (kstep s t) (ks ++ tkeys (snd t)) (S i).
Proof.
  intros [[m l] o] ks i t Ht HK Hn. unfold KI in HK.
  destruct HK as [Fm [Hmax [Hle [Hy [HN [Hi [[cl [kl [Hcl [Hkl HL]]]] [co [ko [Hco [Hko HO]]]]]]]]]]].
  assert (HT := tile_size V t Ht). assert (Ftm := tile_F_max V t Ht).
  assert (HTp := tsize_pos (snd t)). assert (Ht0 := Ht). destruct Ht0 as [Hp [HF Hyt]].
  unfold kstep. set (tm := tmax (snd t)).
  destruct (Rlt_dec m tm) as [Hmv|Hmv]; unfold KI; rewrite app_length, tsize_len.
  - (* the reference moves to the tile max: rescale, round, add the tile, round *)
    destruct (tile_keys_ok V t tm Ht (Rle_refl _)) as [Hkl' Hko'].
    replace (- rnd (tm - m)) with (rnd (m - tm)) by (rewrite <- rnd_opp; f_equal; ring).
    split; auto. split; [destruct (tmax_in (snd t)) as [kv [H1 H2]]; exists kv; split; auto; apply in_or_app; auto|].
    split; [intros kv Hin; apply in_app_or in Hin as [H|H]; [apply Rle_trans with m; [auto|lra]|now apply tmax_ge]|].
    split; [apply ys_le_app; auto|]. split; [lia|]. split; [lia|]. split.
    + assert (S1 := Inv2_scale eL HeL GL HGL expA hA l (lk ks) m tm cl kl 1 1 HhA ltac:(lra) HexpA Fm Ftm
                      ltac:(lra) (ys_le1 ks) HhAL (cap_ok cl kl 1 ltac:(lia)) HL).
      apply (I_round eL GL HeL HGL) in S1; [|rewrite lk_len; lia].
      assert (S2 := tl_inv eL GL HeL HGL hL wL tm (fst t) HhLG HwL Ftm Hkl').
      apply Inv2_perm with (ks' := lk (tkeys (snd t))) in S2; auto.
      assert (S3 := I_add eL GL HeL HGL _ _ _ _ _ _ _ _ _ _ _ S1 S2).
      apply (I_round eL GL HeL HGL) in S3; [|rewrite app_length, lk_len; lia].
      rewrite <- lk_app in S3. eexists; eexists; split; [|split; [|exact S3]]; lia.
    + assert (S1 := Inv2_scale eO HeO GO HGO expA hA o ks m tm co ko 1 V HhA HV HexpA Fm Ftm
                      ltac:(lra) Hy HhAO (cap_ok co ko 1 ltac:(lia)) HO).
      apply (I_round eO GO HeO HGO) in S1; [|lia].
      assert (S2 := to_inv eO GO HeO HGO hO wO tm (snd t) V HhO HhOG HVhO HwO Ftm Hko' Hyt).
      assert (S3 := I_add eO GO HeO HGO _ _ _ _ _ _ _ _ _ _ _ S1 S2).
      apply (I_round eO GO HeO HGO) in S3; [|rewrite app_length; lia].
      eexists; eexists; split; [|split; [|exact S3]]; lia.
  - (* the reference stays: add the tile's sums computed against m, round *)
    assert (Htm : tm <= m) by lra.
    destruct (tile_keys_ok V t m Ht Htm) as [Hkl' Hko'].
    split; auto. split; [destruct Hmax as [kv [H1 H2]]; exists kv; split; auto; apply in_or_app; auto|].
    split; [intros kv Hin; apply in_app_or in Hin as [H|H]; [auto|apply Rle_trans with tm; [now apply tmax_ge|lra]]|].
    split; [apply ys_le_app; auto|]. split; [lia|]. split; [lia|]. split.
    + assert (S2 := tl_inv eL GL HeL HGL hL wL m (fst t) HhLG HwL Fm Hkl').
      apply Inv2_perm with (ks' := lk (tkeys (snd t))) in S2; auto.
      assert (S3 := I_add eL GL HeL HGL _ _ _ _ _ _ _ _ _ _ _ HL S2).
      apply (I_round eL GL HeL HGL) in S3; [|rewrite app_length, lk_len; lia].
      rewrite <- lk_app in S3. eexists; eexists; split; [|split; [|exact S3]]; lia.
    + assert (S2 := to_inv eO GO HeO HGO hO wO m (snd t) V HhO HhOG HVhO HwO Fm Hko' Hyt).
      assert (S3 := I_add eO GO HeO HGO _ _ _ _ _ _ _ _ _ _ _ HO S2).
      apply (I_round eO GO HeO HGO) in S3; [|rewrite app_length; lia].
      eexists; eexists; split; [|split; [|exact S3]]; lia.
Qed.

Lemma krun_fold : forall ts s ks i, KI s ks i -> Forall (tile_ok V) ts ->
  (length ks + length (rowkeys ts) + 2 * (i + length ts) + 2 <= Nmax)%nat ->
  KI (fold_left kstep ts s) (ks ++ rowkeys ts) (i + length ts).
Proof.
  induction ts as [|t ts IH]; intros s ks i HK Hts Hn; simpl.
  - rewrite app_nil_r, Nat.add_0_r. auto.
  - inversion Hts; subst. simpl in Hn. rewrite app_length, tsize_len in Hn.
    replace (i + S (length ts))%nat with (S i + length ts)%nat by lia. rewrite app_assoc.
    apply IH; auto.
    + apply kstep_ok; auto. lia.
    + rewrite app_length, tsize_len. lia.
Qed.

Lemma krun_ok : forall t ts, Forall (tile_ok V) (t :: ts) ->
  (length (rowkeys (t :: ts)) + 2 * length (t :: ts) + 2 <= Nmax)%nat ->
  KI (krun t ts) (rowkeys (t :: ts)) (length (t :: ts)).
Proof.
  intros t ts Hts Hn. inversion Hts; subst. unfold krun. simpl. replace (S (length ts)) with (1 + length ts)%nat by lia.
  apply krun_fold; auto. apply kinit_ok; auto. simpl in Hn. rewrite app_length in Hn. lia.
Qed.

(** From the state after K tiles over n keys in [xlo, xhi] to the bound on the output. *)
Lemma KI_bound : forall m l o ks K xlo xhi, KI (m, l, o) ks K ->
  (forall kv, In kv ks -> xlo <= fst kv <= xhi) ->
  let n := length ks in
  let dl := dev eL (n + K - 2) (K - 1) 1 (xhi - xlo) in let dO := dev eO (n + K - 1) (K - 1) 1 (xhi - xlo) in
  let Al := Ab eL GL n (n + K - 2) (K - 1) 1 in let Ao := Ab eO GO n (n + K - 1) (K - 1) 1 in
  dl + Al < 1 ->
  Rabs (rnd (o / l) - ysum 0 ks / esum 0 ks) <= (1 + u) * ((V * (dl + dO) + Ao + V * Al) / (1 - dl - Al)) + u * V + eta.
Proof.
  intros m l o ks K xlo xhi HK Hx n dl dO Al Ao Hsm.
  destruct HK as [Fm [Hmax [Hle [Hy [HN [Hi [[cl [kl [Hcl [Hkl HL]]]] [co [ko [Hco [Hko HO]]]]]]]]]]].
  fold n in Hcl, Hco.
  apply (I_weaken eL GL HeL HGL _ _ _ _ _ _ (n + K - 2) (K - 1) 1) in HL; try lia.
  apply (I_weaken eO GO HeO HGO _ _ _ _ _ _ (n + K - 1) (K - 1) 1) in HO; try lia.
  now apply (inv_bound eL eO GL GO _ _ _ _ ks m l o V xlo xhi HeL HeO HL HO Hmax Hx Hy).
Qed.

(** The theorem for the kernels' use of osm.h: n keys in K tiles of any sizes, scores in [xlo, xhi]. *)
(* Alike Model.v:golden_bound: kept apart because the two state different algorithms' bounds (their counts differ);
   the shared final step is inv_bound. *)
Theorem kernel_bound : forall t ts xlo xhi, Forall (tile_ok V) (t :: ts) ->
  (length (rowkeys (t :: ts)) + 2 * length (t :: ts) + 2 <= Nmax)%nat ->
  (forall kv, In kv (rowkeys (t :: ts)) -> xlo <= fst kv <= xhi) ->
  let ks := rowkeys (t :: ts) in let n := length ks in let K := length (t :: ts) in
  let dl := dev eL (n + K - 2) (K - 1) 1 (xhi - xlo) in let dO := dev eO (n + K - 1) (K - 1) 1 (xhi - xlo) in
  let Al := Ab eL GL n (n + K - 2) (K - 1) 1 in let Ao := Ab eO GO n (n + K - 1) (K - 1) 1 in
  dl + Al < 1 ->
  let '(m, l, o) := krun t ts in
  Rabs (rnd (o / l) - ysum 0 ks / esum 0 ks) <= (1 + u) * ((V * (dl + dO) + Ao + V * Al) / (1 - dl - Al)) + u * V + eta.
Proof.
  intros t ts xlo xhi Hts Hn Hx ks n K dl dO Al Ao Hsm.
  assert (HK := krun_ok t ts Hts Hn). destruct (krun t ts) as [[m l] o].
  now apply (KI_bound m l o ks K xlo xhi HK Hx).
Qed.

(** Split-KV / threads / MPI: partial rows merged by osm.h merge_coef / merge in any tree. The scaled side's
    product is rounded, or fused into the sum (an fma) when the flag says so; the other side's factor is 1. *)
Definition sc (f : bool) (x : R) := if f then x else rnd x.

Definition merge (sa sb : st) (fl fo : bool) : st :=
  let '(ma, la, oa) := sa in let '(mb, lb, ob) := sb in
  let m := if Rle_dec mb ma then ma else mb in
  if Rle_dec 0 (rnd (ma - mb)) then
    let ca := 1 in                                     (* [mirror] merge_ca_one *)
    let cb := expA (- rnd (ma - mb)) in                (* [mirror] merge_cb *)
    let l := rnd (rnd (la * ca) + sc fl (lb * cb)) in  (* [mirror] merge_l_a *)
    let o := rnd (rnd (oa * ca) + sc fo (ob * cb)) in  (* [mirror] merge_o_a *)
    (m, l, o)
  else
    let ca := expA (rnd (ma - mb)) in                  (* [mirror] merge_ca *)
    let cb := 1 in                                     (* [mirror] merge_cb_one *)
    let l := rnd (sc fl (la * ca) + rnd (lb * cb)) in  (* [mirror] merge_l_b *)
    let o := rnd (sc fo (oa * ca) + rnd (ob * cb)) in  (* [mirror] merge_o_b *)
    (m, l, o).

Inductive mtree := MLeaf (t : tile) (ts : list tile) | MNode (a b : mtree) (fl fo : bool).

Fixpoint meval (mt : mtree) : st :=
  match mt with MLeaf t ts => krun t ts | MNode a b fl fo => merge (meval a) (meval b) fl fo end.
Fixpoint mkeys (mt : mtree) : list (R * R) :=
  match mt with MLeaf t ts => rowkeys (t :: ts) | MNode a b _ _ => mkeys a ++ mkeys b end.
Fixpoint mtiles (mt : mtree) : nat :=
  match mt with MLeaf t ts => length (t :: ts) | MNode a b _ _ => (mtiles a + mtiles b)%nat end.
Fixpoint mok (mt : mtree) : Prop :=
  match mt with MLeaf t ts => Forall (tile_ok V) (t :: ts) | MNode a b _ _ => mok a /\ mok b end.

Lemma rnd_sign : forall a b, F a -> F b -> (0 <= rnd (a - b) <-> b <= a).
Proof.
  intros a b Fa Fb. destruct (rnd_plus a (- b) Fa (F_opp b Fb)) as [d [Hd Hr]].
  replace (a + - b) with (a - b) in Hr by ring. rewrite Hr. apply abs_le_inv in Hd. split; intro H; nra.
Qed.

Lemma sc_inv : forall eq G f s ks m c k q, 0 <= eq <= / 4 -> eta <= G -> (1 <= length ks)%nat ->
  Inv2 eq G s ks m c k q -> Inv2 eq G (sc f s) ks m (S c) k q.
Proof.
  intros eq G f s ks m c k q Heq HG HN H. destruct f; simpl.
  - apply (I_weaken eq G Heq HG s ks m c k q (S c) k q); auto; lia.
  - apply I_round; auto.
Qed.

Lemma merge_ok : forall sa ksa Ka sb ksb Kb fl fo, KI sa ksa Ka -> KI sb ksb Kb ->
  (length ksa + length ksb + 2 * (Ka + Kb) + 2 <= Nmax)%nat ->
  KI (merge sa sb fl fo) (ksa ++ ksb) (Ka + Kb).
Proof.
  intros [[ma la] oa] ksa Ka [[mb lb] ob] ksb Kb fl fo HA HB Hn.
  destruct HA as [Fa [Hmaxa [Hlea [Hya [HNa [Hia [[cla [kla [Hcla [Hkla HLa]]]] [coa [koa [Hcoa [Hkoa HOa]]]]]]]]]]].
  destruct HB as [Fb [Hmaxb [Hleb [Hyb [HNb [Hib [[clb [klb [Hclb [Hklb HLb]]]] [cob [kob [Hcob [Hkob HOb]]]]]]]]]]].
  unfold merge. destruct (Rle_dec 0 (rnd (ma - mb))) as [Hd|Hd].
  - apply (rnd_sign ma mb Fa Fb) in Hd as Hba. destruct (Rle_dec mb ma) as [_|C]; [|lra].
    replace (- rnd (ma - mb)) with (rnd (mb - ma)) by (rewrite <- rnd_opp; f_equal; ring).
    unfold KI. rewrite app_length.
    split; auto. split; [destruct Hmaxa as [kv [H1 H2]]; exists kv; split; auto; apply in_or_app; auto|].
    split; [intros kv Hin; apply in_app_or in Hin as [H|H]; [auto|apply Rle_trans with mb; auto]|].
    split; [apply ys_le_app; auto|]. split; [lia|]. split; [lia|]. split.
    + assert (S1 := Inv2_scale eL HeL GL HGL expA hA lb (lk ksb) mb ma clb klb 1 1 HhA ltac:(lra) HexpA Fb Fa
                      Hba (ys_le1 ksb) HhAL (cap_ok clb klb 1 ltac:(lia)) HLb).
      apply (sc_inv eL GL fl) in S1; auto; try (rewrite lk_len; lia).
      assert (HLa' : Inv2 eL GL (rnd (la * 1)) (lk ksa) ma (S cla) kla 1)
        by (replace (la * 1) with la by ring; apply (I_round eL GL HeL HGL); auto; rewrite lk_len; lia).
      assert (S3 := I_add eL GL HeL HGL _ _ _ _ _ _ _ _ _ _ _ HLa' S1).
      apply (I_round eL GL HeL HGL) in S3; [|rewrite app_length, !lk_len; lia].
      rewrite <- lk_app in S3. eexists; eexists; split; [|split; [|exact S3]]; lia.
    + assert (S1 := Inv2_scale eO HeO GO HGO expA hA ob ksb mb ma cob kob 1 V HhA HV HexpA Fb Fa
                      Hba Hyb HhAO (cap_ok cob kob 1 ltac:(lia)) HOb).
      apply (sc_inv eO GO fo) in S1; auto; try lia.
      assert (HOa' : Inv2 eO GO (rnd (oa * 1)) ksa ma (S coa) koa 1)
        by (replace (oa * 1) with oa by ring; apply (I_round eO GO HeO HGO); auto; lia).
      assert (S3 := I_add eO GO HeO HGO _ _ _ _ _ _ _ _ _ _ _ HOa' S1).
      apply (I_round eO GO HeO HGO) in S3; [|rewrite app_length; lia].
      eexists; eexists; split; [|split; [|exact S3]]; lia.
  - assert (Hab : ma < mb) by (destruct (Rle_dec mb ma) as [C|C]; [exfalso; apply Hd; now apply rnd_sign|lra]).
    destruct (Rle_dec mb ma) as [C|_]; [lra|].
    unfold KI. rewrite app_length.
    split; auto. split; [destruct Hmaxb as [kv [H1 H2]]; exists kv; split; auto; apply in_or_app; auto|].
    split; [intros kv Hin; apply in_app_or in Hin as [H|H]; [apply Rle_trans with ma; [auto|lra]|auto]|].
    split; [apply ys_le_app; auto|]. split; [lia|]. split; [lia|]. split.
    + assert (S1 := Inv2_scale eL HeL GL HGL expA hA la (lk ksa) ma mb cla kla 1 1 HhA ltac:(lra) HexpA Fa Fb
                      ltac:(lra) (ys_le1 ksa) HhAL (cap_ok cla kla 1 ltac:(lia)) HLa).
      apply (sc_inv eL GL fl) in S1; auto; try (rewrite lk_len; lia).
      assert (HLb' : Inv2 eL GL (rnd (lb * 1)) (lk ksb) mb (S clb) klb 1)
        by (replace (lb * 1) with lb by ring; apply (I_round eL GL HeL HGL); auto; rewrite lk_len; lia).
      assert (S3 := I_add eL GL HeL HGL _ _ _ _ _ _ _ _ _ _ _ S1 HLb').
      apply (I_round eL GL HeL HGL) in S3; [|rewrite app_length, !lk_len; lia].
      rewrite <- lk_app in S3. eexists; eexists; split; [|split; [|exact S3]]; lia.
    + assert (S1 := Inv2_scale eO HeO GO HGO expA hA oa ksa ma mb coa koa 1 V HhA HV HexpA Fa Fb
                      ltac:(lra) Hya HhAO (cap_ok coa koa 1 ltac:(lia)) HOa).
      apply (sc_inv eO GO fo) in S1; auto; try lia.
      assert (HOb' : Inv2 eO GO (rnd (ob * 1)) ksb mb (S cob) kob 1)
        by (replace (ob * 1) with ob by ring; apply (I_round eO GO HeO HGO); auto; lia).
      assert (S3 := I_add eO GO HeO HGO _ _ _ _ _ _ _ _ _ _ _ S1 HOb').
      apply (I_round eO GO HeO HGO) in S3; [|rewrite app_length; lia].
      eexists; eexists; split; [|split; [|exact S3]]; lia.
Qed.

Lemma mtiles_pos : forall mt, (1 <= mtiles mt)%nat.
Proof. induction mt; simpl; lia. Qed.

Lemma meval_ok : forall mt, mok mt -> (length (mkeys mt) + 2 * mtiles mt + 2 <= Nmax)%nat ->
  KI (meval mt) (mkeys mt) (mtiles mt).
Proof.
  induction mt as [t ts|a IHa b IHb fl fo]; intros Hok Hn; simpl in *.
  - apply krun_ok; auto.
  - destruct Hok as [Ha Hb]. rewrite app_length in Hn. apply merge_ok; auto.
    + apply IHa; auto. lia.
    + apply IHb; auto. lia.
Qed.

(** The theorem with split-KV merges: any merge tree of partial rows, K tiles in all. *)
Theorem split_bound : forall mt xlo xhi, mok mt -> (length (mkeys mt) + 2 * mtiles mt + 2 <= Nmax)%nat ->
  (forall kv, In kv (mkeys mt) -> xlo <= fst kv <= xhi) ->
  let ks := mkeys mt in let n := length ks in let K := mtiles mt in
  let dl := dev eL (n + K - 2) (K - 1) 1 (xhi - xlo) in let dO := dev eO (n + K - 1) (K - 1) 1 (xhi - xlo) in
  let Al := Ab eL GL n (n + K - 2) (K - 1) 1 in let Ao := Ab eO GO n (n + K - 1) (K - 1) 1 in
  dl + Al < 1 ->
  let '(m, l, o) := meval mt in
  Rabs (rnd (o / l) - ysum 0 ks / esum 0 ks) <= (1 + u) * ((V * (dl + dO) + Ao + V * Al) / (1 - dl - Al)) + u * V + eta.
Proof.
  intros mt xlo xhi Hok Hn Hx ks n K dl dO Al Ao Hsm.
  assert (HK := meval_ok mt Hok Hn). destruct (meval mt) as [[m l] o].
  now apply (KI_bound m l o ks K xlo xhi HK Hx).
Qed.


End Kernel.

Section Golden.
(** The fp64 golden's row (src/golden/golden_fwd.c fwd_block, plain path: no dropout, no fp8, multiplicity 1):
    keys in blocks; per block its max bm; when bm > m: alpha = exp (m - bm), l *= alpha, acc *= alpha (each
    rounded), m = bm; then key by key p = exp (x - m), l += p (rounded) and acc = fma (p, v, acc) (gd_mm's chain);
    at the end acc / l. The same exp for p and alpha. *)
Variables (eL GL GO hL hA V : R) (wL : R -> R -> R) (expA : R -> R) (Nmax : nat).
Hypotheses (HeL : 0 <= eL <= / 4) (HGL : eta <= GL) (HGO : eta <= GO).
Hypotheses (HhL : 0 <= hL) (HhA : 0 <= hA) (HV : 0 <= V).
Hypotheses (HhLG : hL <= GL) (HhOG : hL <= GO) (HVhO : V * hL <= GO) (HhAL : 2 * 1 * hA <= GL) (HhAO : 2 * V * hA <= GO).
Hypotheses (HwL : weight_ok wL eL hL) (HexpA : exp_ok expA ea hA).
Hypothesis Hcap : 2 * INR Nmax * hA <= 1.

Fixpoint lmax (ks : list (R * R)) : R :=
  match ks with [] => 0 | kv :: ks' => match ks' with [] => fst kv | _ => Rmax (fst kv) (lmax ks') end end.

Lemma lmax_ge : forall ks kv, In kv ks -> fst kv <= lmax ks.
Proof.
  induction ks as [|kv0 ks IH]; intros kv Hin; simpl in *; [contradiction|].
  destruct ks as [|kv1 ks'].
  - destruct Hin as [<-|[]]. lra.
  - destruct Hin as [<-|Hin]; [apply Rmax_l|]. apply Rle_trans with (lmax (kv1 :: ks')); [auto|apply Rmax_r].
Qed.

Lemma lmax_in : forall ks, ks <> [] -> exists kv, In kv ks /\ fst kv = lmax ks.
Proof.
  induction ks as [|kv0 ks IH]; intros Hne; [contradiction|]. destruct ks as [|kv1 ks'].
  - exists kv0. simpl. auto.
  - destruct (IH ltac:(discriminate)) as [kv [Hin E]].
    change (lmax (kv0 :: kv1 :: ks')) with (Rmax (fst kv0) (lmax (kv1 :: ks'))). unfold Rmax.
    destruct (Rle_dec (fst kv0) (lmax (kv1 :: ks'))).
    + exists kv. split; [right; auto|auto].
    + exists kv0. split; [left; auto|auto].
Qed.

Definition gkey (s : st) (kv : R * R) : st :=
  let '(m, l, o) := s in let p := wL (fst kv) m in (m, rnd (l + p), rnd (p * snd kv + o)).

Definition gblock (s : st) (blk : list (R * R)) : st :=
  let '(m, l, o) := s in
  let bm := lmax blk in
  let s' := if Rlt_dec m bm then let a := expA (rnd (m - bm)) in (bm, rnd (l * a), rnd (o * a)) else (m, l, o) in
  fold_left gkey blk s'.

Definition ginit (blk : list (R * R)) : st := fold_left gkey blk (lmax blk, 0, 0).
Definition grun (b : list (R * R)) (bs : list (list (R * R))) : st := fold_left gblock bs (ginit b).

(** Inside a block: counts after j blocks started over keys ks. *)
Definition GI' (s : st) (ks : list (R * R)) (j : nat) : Prop :=
  let '(m, l, o) := s in
  F m /\ (forall kv, In kv ks -> fst kv <= m) /\ ys_le V ks /\ (1 <= j)%nat /\
  (exists c k, (c <= length ks + j - 1)%nat /\ (k <= j - 1)%nat /\ Inv2 eL GL l (lk ks) m c k 1) /\
  (exists c k, (c <= length ks + j - 1)%nat /\ (k <= j - 1)%nat /\ Inv2 eL GO o ks m c k 1).
Definition GI (s : st) (ks : list (R * R)) (j : nat) : Prop :=
  GI' s ks j /\ (j <= length ks)%nat /\ exists kv, In kv ks /\ fst kv = fst (fst s).

Lemma gcap : forall c k q, (c + k + q + 1 <= Nmax)%nat -> 2 * INR (c + k + q + 1) * hA <= 1.
Proof. intros. apply Rle_trans with (2 * INR Nmax * hA); auto. apply le_INR in H. nra. Qed.

Lemma gkey_m : forall s kv, fst (fst (gkey s kv)) = fst (fst s).
Proof. intros [[m l] o] kv. reflexivity. Qed.
Lemma gkeys_m : forall blk s, fst (fst (fold_left gkey blk s)) = fst (fst s).
Proof. induction blk as [|kv blk IH]; intros s; simpl; auto. rewrite IH. apply gkey_m. Qed.

Lemma gkey_ok : forall s ks j x y, GI' s ks j -> F x -> x <= fst (fst s) -> Rabs y <= V ->
  GI' (gkey s (x, y)) (ks ++ [(x, y)]) j.
Proof.
  intros [[m l] o] ks j x y HG Fx Hx Hy. simpl in Hx.
  destruct HG as [Fm [Hle [Hys [Hj [[cl [kl [Hcl [Hkl HL]]]] [co [ko [Hco [Hko HO]]]]]]]]].
  unfold gkey, GI'. simpl fst. simpl snd. rewrite app_length. simpl length.
  split; auto. split; [intros kv Hin; apply in_app_or in Hin as [H|[<-|[]]]; auto|].
  split; [apply ys_le_app; auto; intros kv [<-|[]]; auto|]. split; auto. split.
  - assert (S1 := Inv2_leaf eL HeL GL HGL wL hL x m 1 HwL Fx Fm Hx ltac:(rewrite Rabs_R1; lra) HhLG).
    rewrite Rmult_1_r in S1.
    assert (S2 := I_add eL GL HeL HGL _ _ _ _ _ _ _ _ _ _ _ HL S1).
    apply (I_round eL GL HeL HGL) in S2; [|rewrite app_length; simpl; lia].
    rewrite lk_app. eexists; eexists; split; [|split; [|exact S2]]; lia.
  - assert (S1 := Inv2_leaf eL HeL GO HGO wL hL x m y HwL Fx Fm Hx
      ltac:(apply Rle_trans with (V * hL); [apply Rmult_le_compat_r; lra|lra]) HhOG).
    assert (S2 := I_add eL GO HeL HGO _ _ _ _ _ _ _ _ _ _ _ HO S1).
    apply (I_round eL GO HeL HGO) in S2; [|rewrite app_length; simpl; lia].
    replace (wL x m * y + o) with (o + wL x m * y) by ring.
    eexists; eexists; split; [|split; [|exact S2]]; lia.
Qed.

Definition blk_ok (blk : list (R * R)) := blk <> [] /\ Forall (fun kv => F (fst kv)) blk /\ ys_le V blk.

Lemma gkeys_ok : forall blk s ks j, GI' s ks j -> Forall (fun kv => F (fst kv) /\ fst kv <= fst (fst s)) blk ->
  ys_le V blk -> GI' (fold_left gkey blk s) (ks ++ blk) j.
Proof.
  induction blk as [|[x y] blk IH]; intros s ks j HG Hf Hy; simpl.
  - now rewrite app_nil_r.
  - inversion Hf as [|kv0 ks0 [Fx Hx] Hf']; subst. replace (ks ++ (x, y) :: blk) with ((ks ++ [(x, y)]) ++ blk)
      by (rewrite <- app_assoc; reflexivity).
    apply IH.
    + apply gkey_ok; auto. apply (Hy (x, y)); simpl; auto.
    + rewrite gkey_m. auto.
    + intros kv Hin. apply Hy. simpl; auto.
Qed.

Lemma GI'_nil : forall m, F m -> GI' (m, 0, 0) [] 1.
Proof.
  intros m Fm. unfold GI'. split; auto. split; [intros kv []|]. split; [intros kv []|]. split; [lia|].
  split; exists 0%nat, 0%nat; (split; [simpl; lia|split; [lia|]]); unfold Inv2, Ab; simpl length;
    (replace (INR 0 * _ * _ * _) with 0 by (simpl; ring)); apply Inv_nil_l; auto.
Qed.

Lemma ginit_ok : forall blk, blk_ok blk -> GI (ginit blk) blk 1.
Proof.
  intros blk [Hne [Hf Hy]]. destruct (lmax_in blk Hne) as [kv [Hin E]].
  assert (Fm : F (lmax blk)) by (rewrite Forall_forall in Hf; rewrite <- E; auto).
  split; [|split; [destruct blk; [contradiction|simpl; lia]|]].
  - change blk with ([] ++ blk) at 2. unfold ginit. apply gkeys_ok; auto. apply GI'_nil; auto.
    rewrite Forall_forall in *. intros kv' Hin'. split; auto. simpl. now apply lmax_ge.
  - exists kv. split; auto. unfold ginit. rewrite gkeys_m. auto.
Qed.

Lemma gblock_ok : forall s ks j blk, GI s ks j -> blk_ok blk -> (length ks + length blk + 2 * j + 2 <= Nmax)%nat ->
  GI (gblock s blk) (ks ++ blk) (S j).
Proof.
  intros [[m l] o] ks j blk [HG [Hjn Hkey]] [Hne [Hf Hy]] Hn. simpl in Hkey.
  destruct (lmax_in blk Hne) as [kvm [Hinm Em]].
  assert (Fbm : F (lmax blk)) by (rewrite Forall_forall in Hf; rewrite <- Em; auto).
  assert (HGc := HG). destruct HGc as [Fm [Hle [Hys [Hj [[cl [kl [Hcl [Hkl HL]]]] [co [ko [Hco [Hko HO]]]]]]]]].
  assert (HN : (1 <= length ks)%nat) by lia.
  unfold gblock. set (bm := lmax blk) in *.
  split; [|split; [rewrite app_length; destruct blk; [contradiction|simpl; lia]|]].
  - destruct (Rlt_dec m bm) as [Hmv|Hmv].
    + apply gkeys_ok; simpl.
      * unfold GI'. split; auto. split; [intros kv Hin; apply Rle_trans with m; [auto|lra]|].
        split; auto. split; [lia|]. split.
        -- assert (S1 := Inv2_scale eL HeL GL HGL expA hA l (lk ks) m bm cl kl 1 1 HhA ltac:(lra) HexpA Fm Fbm
                           ltac:(lra) (ys_le1 ks) HhAL (gcap cl kl 1 ltac:(lia)) HL).
           apply (I_round eL GL HeL HGL) in S1; [|rewrite lk_len; lia].
           eexists; eexists; split; [|split; [|exact S1]]; lia.
        -- assert (S1 := Inv2_scale eL HeL GO HGO expA hA o ks m bm co ko 1 V HhA HV HexpA Fm Fbm
                           ltac:(lra) Hys HhAO (gcap co ko 1 ltac:(lia)) HO).
           apply (I_round eL GO HeL HGO) in S1; [|lia].
           eexists; eexists; split; [|split; [|exact S1]]; lia.
      * rewrite Forall_forall in *. intros kv Hin. split; auto. now apply lmax_ge.
      * auto.
    + apply gkeys_ok; simpl.
      * unfold GI'. split; auto. split; auto. split; auto. split; [lia|]. split.
        -- eexists; eexists; split; [|split; [|exact HL]]; lia.
        -- eexists; eexists; split; [|split; [|exact HO]]; lia.
      * rewrite Forall_forall in *. intros kv Hin. split; auto. apply Rle_trans with bm; [now apply lmax_ge|lra].
      * auto.
  - rewrite gkeys_m. destruct (Rlt_dec m bm); simpl.
    + exists kvm. split; auto. apply in_or_app; auto.
    + destruct Hkey as [kv [H1 H2]]. exists kv. split; auto. apply in_or_app; auto.
Qed.

Lemma grun_fold : forall bs s ks j, GI s ks j -> Forall blk_ok bs ->
  (length ks + length (concat bs) + 2 * (j + length bs) + 2 <= Nmax)%nat ->
  GI (fold_left gblock bs s) (ks ++ concat bs) (j + length bs).
Proof.
  induction bs as [|b bs IH]; intros s ks j HG Hbs Hn; simpl.
  - rewrite app_nil_r, Nat.add_0_r. auto.
  - inversion Hbs; subst. simpl in Hn. rewrite app_length in Hn.
    replace (j + S (length bs))%nat with (S j + length bs)%nat by lia. rewrite app_assoc.
    apply IH; auto.
    + apply gblock_ok; auto. lia.
    + rewrite app_length. lia.
Qed.

(* Alike Model.v:kernel_bound: kept apart because the two state different algorithms' bounds (their counts differ);
   the shared final step is inv_bound. *)
Theorem golden_bound : forall b bs xlo xhi, Forall blk_ok (b :: bs) ->
  (length (concat (b :: bs)) + 2 * length (b :: bs) + 2 <= Nmax)%nat ->
  (forall kv, In kv (concat (b :: bs)) -> xlo <= fst kv <= xhi) ->
  let ks := concat (b :: bs) in let n := length ks in let B := length (b :: bs) in
  let dl := dev eL (n + B - 1) (B - 1) 1 (xhi - xlo) in let dO := dev eL (n + B - 1) (B - 1) 1 (xhi - xlo) in
  let Al := Ab eL GL n (n + B - 1) (B - 1) 1 in let Ao := Ab eL GO n (n + B - 1) (B - 1) 1 in
  dl + Al < 1 ->
  let '(m, l, o) := grun b bs in
  Rabs (rnd (o / l) - ysum 0 ks / esum 0 ks) <= (1 + u) * ((V * (dl + dO) + Ao + V * Al) / (1 - dl - Al)) + u * V + eta.
Proof.
  intros b bs xlo xhi Hbs Hn Hx ks n B dl dO Al Ao Hsm.
  inversion Hbs as [|b0 bs0 Hb Hbs']; subst.
  assert (HK : GI (grun b bs) ks B).
  { unfold grun, ks, B. simpl concat. simpl length. replace (S (length bs)) with (1 + length bs)%nat by lia.
    apply grun_fold; auto. apply ginit_ok; auto. simpl in Hn. rewrite app_length in Hn. lia. }
  destruct (grun b bs) as [[m l] o].
  destruct HK as [[Fm [Hle [Hy [Hj [[cl [kl [Hcl [Hkl HL]]]] [co [ko [Hco [Hko HO]]]]]]]]] [HjN Hmax]].
  simpl in Hmax. fold n in Hcl, Hco.
  apply (I_weaken eL GL HeL HGL _ _ _ _ _ _ (n + B - 1) (B - 1) 1) in HL; try lia.
  apply (I_weaken eL GO HeL HGO _ _ _ _ _ _ (n + B - 1) (B - 1) 1) in HO; try lia.
  now apply (inv_bound eL eL GL GO _ _ _ _ ks m l o V xlo xhi HeL HeL HL HO Hmax Hx Hy).
Qed.

End Golden.

End Model.
