// Hand-written HVX packets for tests/test_hvx_rewrite.py::test_vinsert_keeps_the_rest_of_its_destination_on_qemu.
// void snippet(const void *in, void *out). LLVM builds a vector of a few halves (10 float16
// lanes of a 64-lane register) word by word: `v.w = vinsert(r)` writes the low word of v and
// keeps the other 31, then `valign` rotates it. So the destination of vinsert is read as well.
//   v5, v7: vectors being built; v7 gets its word in the FP packet itself, v5 only after it.
//   P1  v2 = vmpy(v0, v1), with v7.w = vinsert(r2) beside it
//   P2  v5.w = vinsert(r2)
// then v2, v5, v7 to the first three output slots.
	.text
	.globl	snippet
	.p2align	4
	.type	snippet,@function
snippet:
	{ r9 = r1 }
	{ r3 = add(r0,#0) }
	{ v0 = vmem(r3+#0) }
	{ v1 = vmem(r3+#1) }
	{ v5 = vmem(r3+#2) }
	{ v7 = vmem(r3+#3) }
	{ r2 = memw(r3+#512) }
	{
		v2.qf16 = vmpy(v0.hf,v1.hf)
		v7.w = vinsert(r2)
	}
	{ v5.w = vinsert(r2) }
	{ r3 = add(r9,#0) }
	{ vmem(r3+#0) = v2 }
	{ vmem(r3+#1) = v5 }
	{ vmem(r3+#2) = v7 }
	{ jumpr r31 }
.Lfunc_end0:
	.size	snippet, .Lfunc_end0-snippet
