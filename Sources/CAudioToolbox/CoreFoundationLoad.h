/*
 * CoreFoundation, opened when first used (CoreFoundationLoad.c).
 *
 * The real CoreFoundation lives in the Swift toolchain's libFoundation.so, which brings
 * FoundationInternationalization and ICU: linked at start-up they cost every process a few
 * milliseconds of relocations, spent even by those (the jaq tool's --version, a take) that
 * never call CoreFoundation. The forwarders call it through JAQ_CF(Name), which opens the
 * library the first time and looks Name up once per call site.
 *
 * The forwarders declare each real function as `real_Name` under its own symbol (REAL):
 * JAQ_CF takes only its type, so nothing links the symbol itself.
 */
#ifndef JAQ_COREFOUNDATION_LOAD_H
#define JAQ_COREFOUNDATION_LOAD_H

#define REAL(_sym) __asm__(#_sym)

/* The address of CoreFoundation's `name` (a function or data), opening the library first if
 * no one has; `*slot` keeps it for the next call. A library that cannot be opened, or a name it
 * lacks, ends the process with one line on stderr saying which (an installation without the
 * Swift runtime's libFoundation.so). */
__attribute__((visibility("hidden"))) void *jaq_cf_resolve(void **slot, const char *name);

#define JAQ_CF(_sym) \
    (*({ static void *jaq_cf_slot; (__typeof__(&real_##_sym))jaq_cf_resolve(&jaq_cf_slot, #_sym); }))

#endif
