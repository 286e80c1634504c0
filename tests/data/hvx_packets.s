// Hand-written HVX packets for tests/test_hvx_rewrite.py::test_packet_semantics_on_qemu.
// void snippet(const void *in, void *out): in = 32 vectors (v0..v15 from slots 0-15, v16 from 16,
// v24/v25 (sf) from 17/18, slot 19 for the .cur load); out = the vectors stored through r9, then
// the scalar state. Each case is a packet semantics the rewriter must keep; the test computes the
// expected result of every stored vector with suite.targets.qfloat and the packet rules:
//   C1  two HVX FP instructions of one packet read each other's old values
//   C3  another instruction (vor) reads the old value of an HVX FP destination
//   C4  a .new store of an HVX FP result
//   C5  a .cur load feeds an HVX FP source (the FP instruction sees the loaded data)
//   C6  a destination read old (valign) and .new (store) in one packet whose store address
//       register is rewritten in the same packet (the store uses the old r3)
//   C7  a hardware loop whose :endloop0 packet stores the old value of the accumulator
//   C9  widening multiply to a register pair, pair conversion, qf32 add/convert, IEEE max
//   C10 an HVX FP instruction in a packet with a jump
//   C11 a scalar .new store in a packet with an HVX FP instruction
//   C12 a destination read old (valign) and .new (store) in a packet with a load of the very
//       address the store writes (the load sees the old memory: the store goes after the packet)
// and r4, r6-r8, r10-r15, r28, p0-p3, USR, M0 and M1 must come out as set at the start.
	.text
	.globl	snippet
	.p2align	4
	.type	snippet,@function
snippet:
	{
		r2 = r0
		r9 = r1
	}
	{ r4 = #6; r6 = ##0x1234 }
	{ r7 = #-77; r8 = #99 }
	{ r10 = #10; r11 = #11 }
	{ r12 = #12; r13 = #13 }
	{ r14 = #14; r15 = #15 }
	{ r28 = #28 }
	{ p0 = cmp.eq(r6,r6); p1 = cmp.gt(r7,r8) }
	{ p2 = cmp.eq(r6,r6); p3 = cmp.eq(r7,r8) }
	{ m0 = r6 }
	{ m1 = r7 }
	{ r3 = usr }
	{ r3 = setbit(r3,#22) }
	{ usr = r3 }
	{ r5 = usr }
	{ r3 = add(r1,#4608) }
	{ memw(r3+#80) = r5 }
	{ v0 = vmem(r2+#0) }
	{ v1 = vmem(r2+#1) }
	{ v2 = vmem(r2+#2) }
	{ v3 = vmem(r2+#3) }
	{ v4 = vmem(r2+#4) }
	{ v5 = vmem(r2+#5) }
	{ v6 = vmem(r2+#6) }
	{ v7 = vmem(r2+#7) }
	{ r3 = add(r2,#1024) }
	{ v8 = vmem(r3+#0) }
	{ v9 = vmem(r3+#1) }
	{ v10 = vmem(r3+#2) }
	{ v11 = vmem(r3+#3) }
	{ v12 = vmem(r3+#4) }
	{ v13 = vmem(r3+#5) }
	{ v14 = vmem(r3+#6) }
	{ v15 = vmem(r3+#7) }
	{ r3 = add(r2,#2048) }
	{ v16 = vmem(r3+#0) }
	{ v24 = vmem(r3+#1) }
	{ v25 = vmem(r3+#2) }
// C1: two HVX FP instructions read each other's old values
	{
		v2.qf16 = vadd(v3.qf16,v4.hf)
		v3.qf16 = vmpy(v2.hf,v4.hf)
	}
	{ vmem(r9++#1) = v2 }
	{ vmem(r9++#1) = v3 }
// C3: another instruction reads the old value of the destination
	{
		v5.qf16 = vmpy(v0.hf,v1.hf)
		v6 = vor(v5,v5)
	}
	{ vmem(r9++#1) = v5 }
	{ vmem(r9++#1) = v6 }
// C4: a .new store of the result
	{
		v7.hf = v2.qf16
		vmem(r9+#0) = v7.new
	}
	{ r9 = add(r9,#128) }
	{ vmem(r9++#1) = v7 }
// C5: a .cur load feeds an HVX FP source
	{ r3 = add(r2,#2048) }
	{
		v8.qf16 = vadd(v9.hf,v10.hf)
		v9.cur = vmem(r3+#3)
	}
	{ vmem(r9++#1) = v8 }
	{ vmem(r9++#1) = v9 }
// C6: the destination is read old (valign) and .new (store), the store address register is rewritten
	{ r3 = add(r9,#0) }
	{
		r3 = add(r3,#512)
		v11 = valign(v12,v13,r4)
		v12.hf = v14.qf16
		vmem(r3+#1) = v12.new
	}
	{ r9 = add(r9,#1024) }
	{ vmem(r9++#1) = v11 }
	{ vmem(r9++#1) = v12 }
// C7: software-pipelined store of the old value in the :endloop0 packet
	{
		r5 = add(r9,#0)
		loop0(.Lsnip_loop,#3)
	}
	.p2align	4
.Lsnip_loop:
	{
		v15.qf16 = vadd(v15.qf16,v16.hf)
		vmem(r5++#1) = v15
	} :endloop0
	{ r9 = add(r9,#384) }
	{ vmem(r9++#1) = v15 }
// C9: widening multiply, pair conversion, qf32 and IEEE max
	{ v19:18.qf32 = vmpy(v0.hf,v1.hf) }
	{ vmem(r9++#1) = v18 }
	{ vmem(r9++#1) = v19 }
	{ v20.hf = v19:18.qf32 }
	{ vmem(r9++#1) = v20 }
	{ v23.qf32 = vadd(v24.sf,v25.sf) }
	{ v26.sf = v23.qf32 }
	{
		v27.sf = vmax(v26.sf,v24.sf)
		v28.hf = vmax(v0.hf,v1.hf)
	}
	{ vmem(r9++#1) = v23 }
	{ vmem(r9++#1) = v26 }
	{ vmem(r9++#1) = v27 }
	{ vmem(r9++#1) = v28 }
// C10: a jump in the packet
	{
		v21.qf16 = vmpy(v0.hf,v1.hf)
		jump .Lsnip_skip
	}
	{ v21 = vxor(v21,v21) }
.Lsnip_skip:
	{ vmem(r9++#1) = v21 }
// C11: a scalar .new store in the packet
	{
		r3 = add(r6,#5)
		memw(r9+#0) = r3.new
		v22.qf16 = vmpy(v0.hf,v1.hf)
	}
	{ r9 = add(r9,#128) }
	{ vmem(r9++#1) = v22 }
// C12: read old and .new in a packet with a load from the address it stores to
	{ vmem(r9+#0) = v0 }
	{
		v17 = valign(v12,v13,r4)
		v13.hf = v14.qf16
		v16 = vmem(r9+#0)
		vmem(r9+#0) = v13.new
	}
	{ r9 = add(r9,#128) }
	{ vmem(r9++#1) = v16 }
	{ vmem(r9++#1) = v17 }
	{ vmem(r9++#1) = v13 }
// scalar state after all of it
	{ memw(r9+#0) = r4; memw(r9+#4) = r6 }
	{ memw(r9+#8) = r7; memw(r9+#12) = r8 }
	{ memw(r9+#16) = r10; memw(r9+#20) = r11 }
	{ memw(r9+#24) = r12; memw(r9+#28) = r13 }
	{ memw(r9+#32) = r14; memw(r9+#36) = r15 }
	{ memw(r9+#40) = r28 }
	{ r3 = p3:0 }
	{ memw(r9+#44) = r3 }
	{ r3 = usr }
	{ memw(r9+#48) = r3 }
	{ r3 = m0 }
	{ memw(r9+#52) = r3 }
	{ r3 = m1 }
	{ memw(r9+#56) = r3 }
	{ memw(r9+#60) = r2; memw(r9+#64) = r29 }
	{ jumpr r31 }
	.size	snippet, .-snippet
