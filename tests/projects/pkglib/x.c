/* The project's own library, installed in pkg/lib/: it needs the runtime library. */
int fakert_answer(void);
int x_answer(void) { return fakert_answer(); }
