import Glibc

/// A value behind a pthread mutex.
///
/// Used instead of `Synchronization.Mutex` because on Linux (Swift 6.3.1) ThreadSanitizer does
/// not see `Mutex`'s synchronization and reports every access inside `withLock` as a race
/// (reproduced with two threads appending under one `Mutex`); pthread mutexes are intercepted.
/// Callable from async code; never hold it across an `await`.
package final class Locked<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    package init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    package func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
