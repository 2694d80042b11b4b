#ifndef VIT_TESTS_LOOPBACK_H
#define VIT_TESTS_LOOPBACK_H

/* A client of `vit serve` on this machine, for its tests, its HTTP fuzzer and the load and
 * malformed-request benchmarks (bench/serve): a loopback connection whose reads and writes give
 * up after timeout_s, and sending a whole buffer. */

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static inline int connect_loopback(int port, int timeout_s) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    const struct timeval limit = {timeout_s, 0};
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* 0 when all n bytes went, -1 when the connection ended first (a server may answer and close
 * before a body is all sent: a 413, say). */
static inline int send_all(int fd, const void *data, size_t n) {
    const char *p = data;
    while (n > 0) {
        const ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

#endif
