/* Run-time CPU feature detection (cpu.c). Util layer. */
#ifndef SIMLSH_CPU_H
#define SIMLSH_CPU_H

/* Best ISA of this CPU (SIMLSH_ISA_SCALAR/AVX2/AVX512). Cached. */
int simlsh__cpu_best_isa(void);
/* Map a params ISA (AUTO allowed) to a runnable one. */
int simlsh__isa_resolve(int isa);

#endif
