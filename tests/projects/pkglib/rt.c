/* The stand-in runtime library (what a runtime wheel such as the CUDA runtime's would install). */
int fakert_answer(void) { return 42; }
