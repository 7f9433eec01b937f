import CMicroHTTPD
import Foundation
import Glibc
import Telemetry

/// One thread that `poll()`s the sockets of all connections with a running request Task for
/// `POLLRDHUP`, because libmicrohttpd notices a dead peer only when a write fails and never
/// while a connection is suspended. An wake pipe wakes the poll when the set changes.
///
/// A client that half-closes (shuts down its writing side) looks disconnected: a documented
/// trade-off. Entries are removed when the request completes, before the fd can be reused.
final class HangupWatcher: Sendable {
    struct Entry: Sendable {
        let fd: Int32
        let token: UInt64
        let onHangup: @Sendable () -> Void
    }

    struct State {
        var entries: [Int32: Entry] = [:]
        var nextToken: UInt64 = 1
        var running = true
    }

    private let state = Locked(State())
    private let wakeFD: Int32
    private let wakeWriteFD: Int32

    init() {
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) != 0 { fatalError("pipe failed: \(errno)") }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        wakeFD = fds[0]
        wakeWriteFD = fds[1]
        let thread = Thread { [self] in self.run() }
        thread.name = "inferd-hangup-watcher"
        thread.start()
    }

    /// Starts watching `fd`; returns a token for `unwatch`.
    func watch(fd: Int32, onHangup: @escaping @Sendable () -> Void) -> UInt64 {
        let token = state.withLock { s in
            let token = s.nextToken
            s.nextToken += 1
            s.entries[fd] = Entry(fd: fd, token: token, onHangup: onHangup)
            return token
        }
        wake()
        return token
    }

    func unwatch(fd: Int32, token: UInt64) {
        let removed = state.withLock { s in
            guard s.entries[fd]?.token == token else { return false }
            s.entries[fd] = nil
            return true
        }
        if removed { wake() }
    }

    var watchedCount: Int { state.withLock { $0.entries.count } }

    /// Ends the thread; it closes the wake pipe on its way out.
    func stop() {
        state.withLock { $0.running = false }
        wake()
    }

    private func wake() {
        var one: UInt8 = 1
        _ = Glibc.write(wakeWriteFD, &one, 1)
    }

    private func run() {
        let rdhup = inferd_mhd_pollrdhup()
        let hangup = rdhup | Int16(POLLHUP) | Int16(POLLERR)
        while true {
            let (entries, running) = state.withLock { (Array($0.entries.values), $0.running) }
            if !running { break }
            var fds = [pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
            fds += entries.map { pollfd(fd: $0.fd, events: rdhup, revents: 0) }
            let n = poll(&fds, nfds_t(fds.count), -1)
            if n < 0 {
                if errno == EINTR { continue }
                break
            }
            if fds[0].revents != 0 {
                var drain = [UInt8](repeating: 0, count: 256)
                while Glibc.read(wakeFD, &drain, drain.count) > 0 {}
            }
            for (i, entry) in entries.enumerated() {
                let revents = fds[i + 1].revents
                guard revents != 0 else { continue }
                let invalid = revents & Int16(POLLNVAL) != 0
                guard invalid || revents & hangup != 0 else { continue }
                // Act only if this exact registration is still current (the fd may have been reused).
                let current = state.withLock { s in
                    guard s.entries[entry.fd]?.token == entry.token else { return false }
                    s.entries[entry.fd] = nil
                    return true
                }
                if current && !invalid { entry.onHangup() }
            }
        }
        close(wakeFD)
        close(wakeWriteFD)
    }
}
