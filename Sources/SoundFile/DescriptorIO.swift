import CSndFile
import Glibc

/// libsndfile's virtual I/O over a file descriptor, remembering the `errno` of the first failed
/// system call so that callers can tell a full disk (ENOSPC, EFBIG) from other failures.
///
/// The callbacks run on the thread that called into libsndfile, inside the owning
/// ``SoundFile``'s call; they never outlive it.
///
/// A regular file this process alone writes (opened by path, for writing) keeps its offset and
/// length here: libsndfile's seeks, tells and length queries then cost no system call, and its
/// reads and writes go to that offset with `pread`/`pwrite`. libsndfile rewrites a header as
/// tell, length, seek to 0, write, seek back: five system calls where one `pwrite` does, for
/// every file of a take once a second (issue #29: 3200 calls in a 10 s take of 64 tracks).
/// Other descriptors (passed in, or files only read, which others may still be writing) use
/// the descriptor's own offset, as before.
final class DescriptorIO {
    let fileDescriptor: Int32
    let closesDescriptor: Bool
    private var failedErrno: Int32?
    /// Whether `position` and `length` stand for the descriptor's offset and the file's size.
    private let tracksOffset: Bool
    /// The offset the next read or write starts at (when `tracksOffset`).
    private var position: Int64 = 0
    /// The file's size in bytes (when `tracksOffset`): as found at the open, then grown by writes.
    private var length: Int64 = 0

    /// - Parameter tracksOffset: keep the offset and length here (a regular file nothing else
    ///   writes while it is open); ignored, and the descriptor's offset used, if it is not a
    ///   regular file.
    /// - Parameter openedWith: the `fstat` of a regular file the caller has just opened (its
    ///   offset 0), which spares asking the descriptor again (issue #29: two calls per track).
    init(fileDescriptor: Int32, closesDescriptor: Bool, tracksOffset: Bool = false, openedWith opened: stat? = nil) {
        self.fileDescriptor = fileDescriptor
        self.closesDescriptor = closesDescriptor
        if tracksOffset, let opened, (opened.st_mode & S_IFMT) == S_IFREG {
            self.tracksOffset = true
            length = Int64(opened.st_size)
            return
        }
        var status = stat()
        let start = tracksOffset ? lseek(fileDescriptor, 0, SEEK_CUR) : -1
        if start >= 0, fstat(fileDescriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG {
            self.tracksOffset = true
            position = Int64(start)
            length = Int64(status.st_size)
        } else {
            self.tracksOffset = false
        }
    }

    /// The offset the next read or write starts at.
    var offset: Int64 {
        tracksOffset ? position : Int64(lseek(fileDescriptor, 0, SEEK_CUR))
    }

    /// The file's size in bytes as kept here; nil when the descriptor's offset is used.
    var trackedLength: Int64? { tracksOffset ? length : nil }

    /// The file's size in bytes, -1 (the error remembered) if it cannot be had.
    private var fileLength: Int64 {
        if tracksOffset { return length }
        var status = stat()
        guard fstat(fileDescriptor, &status) == 0 else { fail(errno); return -1 }
        return Int64(status.st_size)
    }

    func resetError() { failedErrno = nil }

    /// The error of the first system call that failed since `resetError()`, and clears it.
    func takeError() -> SoundFileError? {
        defer { failedErrno = nil }
        return failedErrno.map { SoundFileError.system($0) }
    }

    private func fail(_ code: Int32) {
        if failedErrno == nil { failedErrno = code }
    }

    private static func from(_ user: UnsafeMutableRawPointer?) -> DescriptorIO {
        Unmanaged<DescriptorIO>.fromOpaque(user!).takeUnretainedValue()
    }

    /// Repeats a read or write until `count` bytes moved, the end of the file (0) or an error
    /// (remembered), retrying on EINTR. Returns the bytes moved.
    private func repeatUntilDone(_ count: sf_count_t, _ step: (Int) -> Int) -> sf_count_t {
        var done = 0
        while done < Int(count) {
            let moved = step(done)
            if moved > 0 {
                done += moved
            } else if moved < 0, errno == EINTR {
                continue
            } else {
                if moved < 0 { fail(errno) }
                break
            }
        }
        return sf_count_t(done)
    }

    /// A read or write at the kept offset (`step` moves bytes from `done` on, at file offset
    /// `at`), repeated until done; the offset then moves past the bytes moved, and a write past
    /// the end grows the length.
    private func atKeptOffset(_ count: sf_count_t, _ step: (_ done: Int, _ at: off_t) -> Int) -> sf_count_t {
        let start = position
        let moved = repeatUntilDone(count) { done in step(done, off_t(start + Int64(done))) }
        position += Int64(moved)
        length = max(length, position)
        return moved
    }

    /// The table `sf_open_virtual` takes; `user_data` is an unretained `DescriptorIO`.
    static var callbacks: SF_VIRTUAL_IO {
        SF_VIRTUAL_IO(
            get_filelen: { user in
                sf_count_t(DescriptorIO.from(user).fileLength)
            },
            seek: { offset, whence, user in
                let io = DescriptorIO.from(user)
                if io.tracksOffset {
                    let base: Int64 = switch whence {
                    case SEEK_SET: 0
                    case SEEK_CUR: io.position
                    case SEEK_END: io.length
                    default: -1
                    }
                    // A negative result is libsndfile's reading of a damaged header, as below.
                    guard base >= 0, base + Int64(offset) >= 0 else { return -1 }
                    io.position = base + Int64(offset)
                    return sf_count_t(io.position)
                }
                let position = lseek(io.fileDescriptor, off_t(offset), whence)
                // EINVAL is a negative offset libsndfile computed from a damaged header: the
                // content's fault, reported by libsndfile's own error, not a system failure.
                if position < 0, errno != EINVAL { io.fail(errno) }
                return sf_count_t(position)
            },
            read: { buffer, count, user in
                let io = DescriptorIO.from(user)
                guard let buffer else { return 0 }
                guard io.tracksOffset else {
                    return io.repeatUntilDone(count) { done in Glibc.read(io.fileDescriptor, buffer + done, Int(count) - done) }
                }
                return io.atKeptOffset(count) { done, at in pread(io.fileDescriptor, buffer + done, Int(count) - done, at) }
            },
            write: { bytes, count, user in
                let io = DescriptorIO.from(user)
                guard let bytes else { return 0 }
                guard io.tracksOffset else {
                    return io.repeatUntilDone(count) { done in Glibc.write(io.fileDescriptor, bytes + done, Int(count) - done) }
                }
                return io.atKeptOffset(count) { done, at in pwrite(io.fileDescriptor, bytes + done, Int(count) - done, at) }
            },
            tell: { user in
                sf_count_t(DescriptorIO.from(user).offset)
            }
        )
    }
}
