/* placeholder so the module library has a source until its code lands */
int tm_record_placeholder_(void);
int tm_record_placeholder_(void) { return 0; }
