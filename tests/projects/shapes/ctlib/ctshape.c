/* No Python.h: ctypes calls these. */
int ctshape_add(int a, int b) { return a + b; }
const char *ctshape_variant(void) { return CTSHAPE_VARIANT; }
