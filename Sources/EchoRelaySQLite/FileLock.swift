import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive lock on the database file itself, so only one process uses it.
///
/// BSD `flock` locks belong to the open file description: the kernel drops them when the
/// process dies, even under `kill -9`, so there is no stale PID file to clean up. On Linux
/// they are independent of the `fcntl` locks SQLite takes on the same file. (Not on NFS,
/// where flock is emulated with fcntl; SQLite's WAL mode does not work there either.)
///
/// One care: closing *any* descriptor of a file drops every `fcntl` lock the process holds
/// on it, SQLite's included. So this process never opens a second descriptor of a file it
/// has locked (a registry of locked files answers first), and the lock's descriptor is
/// closed only after SQLite's connection.
final class FileLock: Sendable {
    fileprivate struct FileID: Hashable {
        let device: UInt64
        let inode: UInt64
    }

    /// The files this process holds, by device and inode, so another path to the same file
    /// (a symlink, a hard link) is refused too.
    private static let held = Mutex<Set<FileID>>([])

    let path: String
    private let descriptor: Mutex<Int32?>
    private let id: FileID

    private init(path: String, descriptor: Int32, id: FileID) {
        self.path = path
        self.descriptor = Mutex(descriptor)
        self.id = id
    }

    /// Opens (creating if missing) and locks `path`, or throws `SQLiteStoreError.locked`.
    ///
    /// A lock another process holds is tried again for up to `patience` before the refusal: a
    /// child process being started by another thread holds a copy of every descriptor, the
    /// lock's too, until it executes its program (`O_CLOEXEC` closes it then), so a file closed
    /// a moment ago can still look locked for that moment. Another EchoRelay holds it for good.
    static func acquire(path: String, patience: Duration = .seconds(1)) throws(SQLiteStoreError) -> FileLock {
        let deadline = ContinuousClock.now + patience
        while true {
            if let lock = try acquireOnce(path: path) { return lock }
            guard ContinuousClock.now < deadline else { throw .locked(path: path) }
            usleep(20_000)
        }
    }

    /// The lock, or nil when another open file description holds it now.
    private static func acquireOnce(path: String) throws(SQLiteStoreError) -> FileLock? {
        try held.withLock { (held: inout Set<FileID>) throws(SQLiteStoreError) -> FileLock? in
            var info = stat()
            if stat(path, &info) == 0, held.contains(FileID(info)) { throw .locked(path: path) }

            // O_CLOEXEC: a child process (a spawned tool, a test helper) must not inherit the
            // descriptor, or the lock would outlive this process in it.
            let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw .cannotOpen(path: path, reason: String(cString: strerror(errno))) }
            guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
                let failure = errno
                close(fd)  // no SQLite connection of ours has this file open, so no fcntl lock to lose
                if failure == EWOULDBLOCK { return nil }
                throw .cannotOpen(path: path, reason: "flock: " + String(cString: strerror(failure)))
            }
            guard fstat(fd, &info) == 0 else {
                let failure = errno
                close(fd)
                throw .cannotOpen(path: path, reason: "fstat: " + String(cString: strerror(failure)))
            }
            let id = FileID(info)
            held.insert(id)
            return FileLock(path: path, descriptor: fd, id: id)
        }
    }

    /// Unlocks and closes the file. Call it only after SQLite's connection to it is closed.
    func release() {
        guard let fd = descriptor.withLock({ fd in defer { fd = nil }; return fd }) else { return }
        Self.held.withLock { held in
            close(fd)  // closing the last descriptor of the open file description drops the flock
            _ = held.remove(id)
        }
    }
}

extension FileLock.FileID {
    fileprivate init(_ info: stat) {
        self.init(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }
}
