/* SPDX-License-Identifier: GPL-2.0 */
/* C++ symbol names, demangled with the C++ runtime's own demangler. */
#ifndef FNPROF_DEMANGLE_H
#define FNPROF_DEMANGLE_H

/* "app::middle(int)" for "_ZN3app6middleEi"; NULL when name is not a mangled C++ name. Caller frees. */
char *demangle(const char *name);

/* The demangled name without its parameter list: "app::middle". Caller frees. */
char *demangle_base(const char *name);

#endif /* FNPROF_DEMANGLE_H */
