# mpi/configure.m4 - included by configure.ac: find each MPI's development
# files for the drop-in layer (mpi/).  The layer is compiled against that
# MPI's mpi.h only; no MPI library is linked.
#
# RCOLL_MPI_LAYER(VAR, WITH-VALUE, COMPILE-FLAGS-COMMAND, MARKER-MACRO, LABEL)
# sets VAR_CPPFLAGS, rcoll_mpi_VAR (yes/no) and the conditional HAVE_VAR.
# WITH-VALUE: check (default: from the MPI's compiler wrapper), no, or a prefix.
AC_DEFUN([RCOLL_MPI_LAYER], [
    $1_CPPFLAGS=
    rcoll_mpi_$1=no
    AS_CASE(["$2"],
        [no], [],
        [check|yes|""], [AS_IF([test -n "$3"],
                         [$1_CPPFLAGS=`$3 2>/dev/null | tr ' ' '\n' | grep '^-I' | tr '\n' ' '`])],
        [$1_CPPFLAGS="-I$2/include"])
    AS_IF([test "x$2" != xno], [
        rcoll_save_CPPFLAGS=$CPPFLAGS
        CPPFLAGS="$CPPFLAGS $$1_CPPFLAGS"
        AC_MSG_CHECKING([for $5's mpi.h])
        AC_PREPROC_IFELSE([AC_LANG_SOURCE([[#include <mpi.h>
#ifndef $4
#error not $5
#endif]])], [rcoll_mpi_$1=yes], [rcoll_mpi_$1=no])
        AC_MSG_RESULT([$rcoll_mpi_$1])
        CPPFLAGS=$rcoll_save_CPPFLAGS
        AS_IF([test "x$rcoll_mpi_$1" = xno && test "x$2" != xcheck],
            [AC_MSG_ERROR([--with-m4_tolower($1)=$2: no $5 mpi.h found ($$1_CPPFLAGS)])])
    ])
    AC_SUBST([$1_CPPFLAGS])
    AM_CONDITIONAL([HAVE_$1], [test "x$rcoll_mpi_$1" = xyes])
])
