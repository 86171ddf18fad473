/* The extension in pkg/: it needs its sibling library and the runtime library. */
int fakert_answer(void);
int x_answer(void);
int c_answer(void) { return x_answer() + fakert_answer() - 42; }
