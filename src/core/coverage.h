/* Coverage builds (-DFR_COVERAGE=ON, docs/reliability.md "Coverage"): gcov writes a process's counts when it exits,
 * and a forked child that leaves by _exit (the plugin host's runner, the allocation-failure sweep's children) skips
 * that, so the lines it ran would count as never run. fr_coverage_flush() writes them first; it does nothing in any
 * other build. */
#ifndef FR_CORE_COVERAGE_H
#define FR_CORE_COVERAGE_H

#ifdef FR_COVERAGE_BUILD
void __gcov_dump(void); /* libgcov */
static inline void fr_coverage_flush(void) { __gcov_dump(); }
#else
static inline void fr_coverage_flush(void) {}
#endif

#endif
