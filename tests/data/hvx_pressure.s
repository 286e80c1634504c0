// Hand-written HVX packets for tests/test_hvx_rewrite.py::test_register_pressure_on_qemu.
// void snippet(const void *in, void *out): v0-v31 from the 32 input slots, then two packets of
// HVX floating point while every vector register is live (all are stored afterwards): no
// register is free to keep what the vector model changes, so the stubs keep it in memory.
//   P1  two instructions reading each other's old values: v5 = vmpy(v1, v2), v1 = vadd(v5, v7)
//   P2  a result whose old value the packet reads: v9 = vadd(v9, v10.hf), v11 = vor(old v9)
// then v0-v31 to the first 32 output slots.
	.text
	.globl	snippet
	.p2align	4
	.type	snippet,@function
snippet:
	{ r9 = r1 }
	{ r3 = add(r0,#0) }
	{ v0 = vmem(r3+#0) }
	{ v1 = vmem(r3+#1) }
	{ v2 = vmem(r3+#2) }
	{ v3 = vmem(r3+#3) }
	{ v4 = vmem(r3+#4) }
	{ v5 = vmem(r3+#5) }
	{ v6 = vmem(r3+#6) }
	{ v7 = vmem(r3+#7) }
	{ r3 = add(r0,#1024) }
	{ v8 = vmem(r3+#0) }
	{ v9 = vmem(r3+#1) }
	{ v10 = vmem(r3+#2) }
	{ v11 = vmem(r3+#3) }
	{ v12 = vmem(r3+#4) }
	{ v13 = vmem(r3+#5) }
	{ v14 = vmem(r3+#6) }
	{ v15 = vmem(r3+#7) }
	{ r3 = add(r0,#2048) }
	{ v16 = vmem(r3+#0) }
	{ v17 = vmem(r3+#1) }
	{ v18 = vmem(r3+#2) }
	{ v19 = vmem(r3+#3) }
	{ v20 = vmem(r3+#4) }
	{ v21 = vmem(r3+#5) }
	{ v22 = vmem(r3+#6) }
	{ v23 = vmem(r3+#7) }
	{ r3 = add(r0,#3072) }
	{ v24 = vmem(r3+#0) }
	{ v25 = vmem(r3+#1) }
	{ v26 = vmem(r3+#2) }
	{ v27 = vmem(r3+#3) }
	{ v28 = vmem(r3+#4) }
	{ v29 = vmem(r3+#5) }
	{ v30 = vmem(r3+#6) }
	{ v31 = vmem(r3+#7) }
	{
		v5.qf16 = vmpy(v1.hf,v2.hf)
		v1.qf16 = vadd(v5.qf16,v7.qf16)
	}
	{
		v9.qf16 = vadd(v9.qf16,v10.hf)
		v11 = vor(v9,v9)
	}
	{ r3 = add(r9,#0) }
	{ vmem(r3+#0) = v0 }
	{ vmem(r3+#1) = v1 }
	{ vmem(r3+#2) = v2 }
	{ vmem(r3+#3) = v3 }
	{ vmem(r3+#4) = v4 }
	{ vmem(r3+#5) = v5 }
	{ vmem(r3+#6) = v6 }
	{ vmem(r3+#7) = v7 }
	{ r3 = add(r9,#1024) }
	{ vmem(r3+#0) = v8 }
	{ vmem(r3+#1) = v9 }
	{ vmem(r3+#2) = v10 }
	{ vmem(r3+#3) = v11 }
	{ vmem(r3+#4) = v12 }
	{ vmem(r3+#5) = v13 }
	{ vmem(r3+#6) = v14 }
	{ vmem(r3+#7) = v15 }
	{ r3 = add(r9,#2048) }
	{ vmem(r3+#0) = v16 }
	{ vmem(r3+#1) = v17 }
	{ vmem(r3+#2) = v18 }
	{ vmem(r3+#3) = v19 }
	{ vmem(r3+#4) = v20 }
	{ vmem(r3+#5) = v21 }
	{ vmem(r3+#6) = v22 }
	{ vmem(r3+#7) = v23 }
	{ r3 = add(r9,#3072) }
	{ vmem(r3+#0) = v24 }
	{ vmem(r3+#1) = v25 }
	{ vmem(r3+#2) = v26 }
	{ vmem(r3+#3) = v27 }
	{ vmem(r3+#4) = v28 }
	{ vmem(r3+#5) = v29 }
	{ vmem(r3+#6) = v30 }
	{ vmem(r3+#7) = v31 }
	{ jumpr r31 }
.Lfunc_end0:
	.size	snippet, .Lfunc_end0-snippet
