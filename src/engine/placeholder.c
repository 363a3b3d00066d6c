/* placeholder so the module library has a source until its code lands */
int tm_engine_placeholder_(void);
int tm_engine_placeholder_(void) { return 0; }
