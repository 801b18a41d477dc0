static void unused_(void) {}
