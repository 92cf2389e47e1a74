(** The rounding model of Model.v instantiated with IEEE 754 round-to-nearest-even (Flocq's FLT format: binary32 =
    (emin, prec) = (-149, 24), binary64 = (-1074, 53)), every hypothesis of Model.v discharged but the exp's, and
    the two theorems of proofs/round/README.md stated with the constants the C code uses (core/osm_bound.c). *)
From Coq Require Import Reals Psatz ZArith List.
From Flocq Require Import Core Plus_error Relative.
Require Import FR.Model.
Open Scope R_scope.

Section Fmt.
Variables emin prec : Z.
Hypothesis Hp : (1 < prec)%Z.

Instance prec_gt_0_F : Prec_gt_0 prec.
Proof. unfold Prec_gt_0. lia. Qed.

Definition rndF (x : R) : R := round radix2 (FLT_exp emin prec) ZnearestE x.
Definition FF (x : R) : Prop := generic_format radix2 (FLT_exp emin prec) x.
Definition uF : R := bpow radix2 (- prec).
Definition etaF : R := bpow radix2 (emin - 1).

Lemma half_bpow : forall e, / 2 * bpow radix2 (e + 1) = bpow radix2 e.
Proof. intros. rewrite bpow_plus. simpl. unfold Z.pow_pos. simpl. field. Qed.

Lemma rndF_model : forall x, exists d e, Rabs d <= uF /\ Rabs e <= etaF /\ rndF x = x * (1 + d) + e.
Proof.
  intros x. destruct (error_N_FLT radix2 emin prec ltac:(lia) (fun t => negb (Z.even t)) x) as [d [e [Hd [He [_ Hr]]]]].
  exists d, e. split; [|split; [|exact Hr]].
  - unfold uF. now rewrite <- half_bpow.
  - unfold etaF. replace emin with (emin - 1 + 1)%Z in He by lia. now rewrite half_bpow in He.
Qed.

Lemma rndF_plus : forall a b, FF a -> FF b -> exists d, Rabs d <= uF /\ rndF (a + b) = (a + b) * (1 + d).
Proof.
  intros a b Fa Fb.
  destruct (FLT_plus_error_N_ex radix2 emin prec (fun t => negb (Z.even t)) a b Fa Fb) as [d [Hd Hr]].
  exists d. split; auto. apply Rle_trans with (1 := Hd).
  assert (H1 := u_rod1pu_ro_le_u_ro radix2 prec). apply Rle_trans with (1 := H1).
  unfold uF, u_ro. rewrite <- (half_bpow (- prec)). right. reflexivity.
Qed.

Lemma FF_opp : forall x, FF x -> FF (- x).
Proof. intros x H. now apply generic_format_opp. Qed.

Lemma FF_rnd : forall x, FF (rndF x).
Proof. intros x. apply generic_format_round; auto with typeclass_instances. Qed.

Lemma rndF_opp : forall x, rndF (- x) = - rndF x.
Proof.
  intros x. unfold rndF. apply round_NE_opp; auto with typeclass_instances.
Qed.

Lemma uF_small : (4 <= prec)%Z -> 0 <= uF <= / 16.
Proof.
  intros H. unfold uF. split; [apply bpow_ge_0|].
  replace (/ 16) with (bpow radix2 (-4)) by (simpl; unfold Z.pow_pos; simpl; field).
  apply bpow_le. lia.
Qed.

End Fmt.

(** P rounded to a 16-bit format before P.V (bf16: (-133, 8), fp16: (-24, 11)), ties either way (the kernels round
    half away from zero): the standard model with its own u and eta. *)
Lemma rndP_model : forall emin prec choice, (1 < prec)%Z -> forall x, exists d e,
  Rabs d <= bpow radix2 (- prec) /\ Rabs e <= bpow radix2 (emin - 1) /\
  round radix2 (FLT_exp emin prec) (Znearest choice) x = x * (1 + d) + e.
Proof.
  intros emin prec choice Hp x. destruct (error_N_FLT radix2 emin prec ltac:(lia) choice x) as [d [e [Hd [He [_ Hr]]]]].
  exists d, e. split; [|split; [|exact Hr]].
  - now rewrite <- half_bpow.
  - replace emin with (emin - 1 + 1)%Z in He by lia. now rewrite half_bpow in He.
Qed.

Definition rnd32 := rndF (-149) 24.
Definition F32 := FF (-149) 24.
Definition u32 := uF 24.
Definition eta32 := etaF (-149).
Definition rnd64 := rndF (-1074) 53.
Definition F64 := FF (-1074) 53.
Definition u64 := uF 53.
Definition eta64 := etaF (-1074).

Lemma u32_eq : u32 = / 16777216.
Proof. unfold u32, uF. simpl. unfold Z.pow_pos. simpl. field. Qed.

(** ** fp32: core/osm.h as the kernels drive it, any tiles, any merge tree of partial rows *)

(* Alike Fp.v:golden_f64_bound: kept apart because each instantiates its own Model.v theorem with its own format and
   constants; the likeness is the discharge of the same hypotheses. *)
Theorem osm_f32_bound : forall (expA expL rp : R -> R) (ea eL hA hL up hp V : R) (mt : mtree) (xlo xhi : R),
  0 <= ea <= / 16 -> 0 <= eL <= / 16 -> 0 <= up <= / 16 -> 0 <= hA -> 0 <= hL -> 0 <= hp -> 0 <= V ->
  exp_ok F32 expA ea hA ->                                  (* the rescale exp (expf) *)
  exp_ok F32 expL eL hL ->                                  (* the weight exp (vectorized exp / expf) *)
  (forall x, exists d a, Rabs d <= up /\ Rabs a <= hp /\ rp x = x * (1 + d) + a) -> (* P to the input dtype *)
  let wL := fun x m => expL (rnd32 (x - m)) in
  let wO := fun x m => rp (wL x m) in
  let eO := (1 + eL) * (1 + up) - 1 in let hO := hL * (1 + up) + hp in
  let GL := 4 * (eta32 + hL + hA) in let GO := 2 * (eta32 + hO + hA) * (1 + V) in
  let ks := mkeys mt in let n := length ks in let K := mtiles mt in
  2 * INR (n + 2 * K + 2) * hA <= 1 ->
  mok F32 V mt ->
  (forall kv, In kv ks -> xlo <= fst kv <= xhi) ->
  let dl := dev u32 ea eL (n + K - 2) (K - 1) 1 (xhi - xlo) in
  let dO := dev u32 ea eO (n + K - 1) (K - 1) 1 (xhi - xlo) in
  let Al := Ab u32 ea eL GL n (n + K - 2) (K - 1) 1 in
  let Ao := Ab u32 ea eO GO n (n + K - 1) (K - 1) 1 in
  dl + Al < 1 ->
  let '(_, l, o) := meval rnd32 wL wO expA mt in
  Rabs (rnd32 (o / l) - ysum 0 ks / esum 0 ks)
    <= (1 + u32) * ((V * (dl + dO) + Ao + V * Al) / (1 - dl - Al)) + u32 * V + eta32.
Proof.
  intros expA expL rp ea eL hA hL up hp V mt xlo xhi Hea HeL Hup HhA HhL Hhp HV HexpA HexpL Hrp wL wO eO hO GL GO
         ks n K Hcap Hok Hx dl dO Al Ao Hsm.
  assert (Hp : (1 < 24)%Z) by lia.
  assert (Hu : 0 <= u32 <= / 16) by (apply uF_small; lia).
  assert (Heta : 0 <= eta32) by apply bpow_ge_0.
  assert (HwL : weight_ok u32 F32 wL eL hL)
    by exact (weight_exp u32 rnd32 F32 Hu (rndF_plus _ _ Hp) (FF_opp _ _) (FF_rnd _ _ Hp) expL eL hL
                ltac:(lra) HhL HexpL).
  assert (HwO : weight_ok u32 F32 wO eO hO)
    by exact (weight_round u32 F32 wL eL hL rp up hp ltac:(lra) ltac:(lra) Hrp HwL).
  assert (HeO : 0 <= eO <= / 4) by (unfold eO; split; nra).
  assert (0 <= hO) by (unfold hO; nra).
  apply (split_bound u32 eta32 rnd32 F32 Hu Heta (rndF_model _ _ Hp) (rndF_plus _ _ Hp) (FF_opp _ _)
           (FF_rnd _ _ Hp) (rndF_opp _ _) ea Hea eL eO GL GO hL hO hA V wL wO expA (n + 2 * K + 2)).
  all: try (unfold GL, GO; nra). all: try lia. all: auto. all: try lra.
Qed.

(** ** fp64: the golden's row, n keys in blocks *)

(* Alike Fp.v:osm_f32_bound: kept apart because each instantiates its own Model.v theorem with its own format and
   constants; the likeness is the discharge of the same hypotheses. *)
Theorem golden_f64_bound : forall (expG : R -> R) (eG hG V : R) (b : list (R * R)) (bs : list (list (R * R)))
  (xlo xhi : R),
  0 <= eG <= / 16 -> 0 <= hG -> 0 <= V ->
  exp_ok F64 expG eG hG ->                                  (* glibc exp *)
  let w := fun x m => expG (rnd64 (x - m)) in
  let GL := 4 * (eta64 + hG + hG) in let GO := 2 * (eta64 + hG + hG) * (1 + V) in
  let ks := concat (b :: bs) in let n := length ks in let B := length (b :: bs) in
  2 * INR (n + 2 * B + 2) * hG <= 1 ->
  Forall (blk_ok F64 V) (b :: bs) ->
  (forall kv, In kv ks -> xlo <= fst kv <= xhi) ->
  let dl := dev u64 eG eG (n + B - 1) (B - 1) 1 (xhi - xlo) in
  let Al := Ab u64 eG eG GL n (n + B - 1) (B - 1) 1 in
  let Ao := Ab u64 eG eG GO n (n + B - 1) (B - 1) 1 in
  dl + Al < 1 ->
  let '(_, l, o) := grun rnd64 w expG b bs in
  Rabs (rnd64 (o / l) - ysum 0 ks / esum 0 ks)
    <= (1 + u64) * ((V * (dl + dl) + Ao + V * Al) / (1 - dl - Al)) + u64 * V + eta64.
Proof.
  intros expG eG hG V b bs xlo xhi HeG HhG HV HexpG w GL GO ks n B Hcap Hok Hx dl Al Ao Hsm.
  assert (Hp : (1 < 53)%Z) by lia.
  assert (Hu : 0 <= u64 <= / 16) by (apply uF_small; lia).
  assert (Heta : 0 <= eta64) by apply bpow_ge_0.
  assert (Hw : weight_ok u64 F64 w eG hG)
    by exact (weight_exp u64 rnd64 F64 Hu (rndF_plus _ _ Hp) (FF_opp _ _) (FF_rnd _ _ Hp) expG eG hG
                ltac:(lra) HhG HexpG).
  apply (golden_bound u64 eta64 rnd64 F64 Hu Heta (rndF_model _ _ Hp) (rndF_plus _ _ Hp) (FF_opp _ _)
           (FF_rnd _ _ Hp) eG HeG eG GL GO hG hG V w expG (n + 2 * B + 2));
    auto; unfold GL, GO; try nra; try lia; lra.
Qed.

Print Assumptions osm_f32_bound.
Print Assumptions golden_f64_bound.
Print Assumptions perturb.
