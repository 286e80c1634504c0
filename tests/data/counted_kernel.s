// A hand-written v68 kernel (tests/test_counters.py): the harness calls it as __tvm_ffi_main and
// counts what it executes. Every case of the rewrite is met in a hardware loop of 10 iterations:
// packets of two HVX floating-point instructions, one emptied away, a .new store of a result, a
// result whose old value the packet reads (loaded after it; at the loop end, the packet split), a
// .cur load feeding a source, .new stores done before and after their packet, a register-pair
// result; then a loop whose end packet is emptied. The counts worked out by hand, per packet
// (packets, instructions, HVX instructions), are in the comments and in the test.
	.text
	.globl	__tvm_ffi_main
	.type	__tvm_ffi_main,@function
__tvm_ffi_main:
	{ r2 = ##counted_buf; r3 = #10 }                                           // 1, 2, 0
	{ v0 = vmem(r2+#0) }                                                        // 1, 1, 1
	{ v1 = vmem(r2+#1) }                                                        // 1, 1, 1
	{ r7 = #2; loop0(.Lbody,r3) }                                               // 1, 2, 0
.Lbody:
	{
		v2.qf16 = vmpy(v0.hf,v1.hf)                                             // 1, 2, 2
		v3 = vmem(r2+#2)
	}
	{
		v4.qf16 = vadd(v2.qf16,v3.hf)                                           // 1, 2, 2: emptied
		v5.qf16 = vmpy(v0.hf,v1.hf)
	}
	{
		v6.hf = v4.qf16                                                         // 1, 2, 2
		vmem(r2+#3) = v6.new
	}
	{
		v8.qf16 = vmpy(v0.hf,v1.hf)                                             // 1, 2, 2: v9 = old v8
		v9 = vor(v8,v8)
	}
	{
		v11.qf16 = vadd(v15.hf,v1.hf)                                           // 1, 2, 2: .cur source
		v15.cur = vmem(r2+#4)
	}
	{
		v12 = valign(v3,v13,r7)                                                 // 1, 3, 3: early store
		v13.hf = v4.qf16
		vmem(r2+#5) = v13.new
	}
	{
		v7:6.qf32 = vmpy(v0.hf,v1.hf)                                           // 1, 2, 1: a pair
		r5 = add(r5,#1)
	}
	{
		v18 = valign(v3,v19,r7)                                                 // 1, 4, 4: late store
		v19.hf = v4.qf16
		v20 = vmem(r2+#0)
		vmem(r2+#7) = v19.new
	}
	{
		v10.qf16 = vadd(v10.qf16,v1.hf)                                         // 1, 2, 2: split
		vmem(r2+#6) = v10
	} :endloop0
	{ loop0(.Lend,#3) }                                                         // 1, 1, 0
.Lend:
	{
		v16.qf16 = vmpy(v0.hf,v1.hf)                                            // 1, 1, 1: emptied
	} :endloop0
	{ r0 = #0; jumpr r31 }                                                      // 1, 2, 0
.Lfunc_end0:
	.size	__tvm_ffi_main, .Lfunc_end0-__tvm_ffi_main

	.bss
	.p2align	7
counted_buf:
	.space	1024
