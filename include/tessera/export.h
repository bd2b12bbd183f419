/* TESSERA_API marks what the shared library libtessera.so exports: the classes and functions
 * of the public headers (include/tessera, include/tessera/backend) and the C API. The
 * library is compiled with -fvisibility=hidden, so everything else stays inside it. The
 * same mark serves the static libraries, where it changes nothing. */
#ifndef TESSERA_EXPORT_H
#define TESSERA_EXPORT_H

#if defined(_WIN32)
#define TESSERA_API
#elif defined(__cplusplus) && (defined(__GNUC__) || defined(__clang__))
/* The attribute syntax, which may follow [[nodiscard]] in `class [[nodiscard]] TESSERA_API X`. */
#define TESSERA_API [[gnu::visibility("default")]]
#elif defined(__GNUC__) || defined(__clang__)
#define TESSERA_API __attribute__((visibility("default")))
#else
#define TESSERA_API
#endif

#endif /* TESSERA_EXPORT_H */
