// The only C shim over libmicrohttpd. Every function here exists because Swift cannot
// reach the corresponding libmicrohttpd facility directly; each says why.
#ifndef INFERD_CMICROHTTPD_SHIM_H
#define INFERD_CMICROHTTPD_SHIM_H
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>

#endif
