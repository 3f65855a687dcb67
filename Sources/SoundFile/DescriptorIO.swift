import CSndFile
import Glibc

/// libsndfile's virtual I/O over a file descriptor, remembering the `errno` of the first failed
/// system call so that callers can tell a full disk (ENOSPC, EFBIG) from other failures.
///
/// The callbacks run on the thread that called into libsndfile, inside the owning
/// ``SoundFile``'s call; they never outlive it.
final class DescriptorIO {
    let fileDescriptor: Int32
    let closesDescriptor: Bool
    private var failedErrno: Int32?

    init(fileDescriptor: Int32, closesDescriptor: Bool) {
        self.fileDescriptor = fileDescriptor
        self.closesDescriptor = closesDescriptor
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

    /// The table `sf_open_virtual` takes; `user_data` is an unretained `DescriptorIO`.
    static var callbacks: SF_VIRTUAL_IO {
        SF_VIRTUAL_IO(
            get_filelen: { user in
                let io = DescriptorIO.from(user)
                var status = stat()
                guard fstat(io.fileDescriptor, &status) == 0 else { io.fail(errno); return -1 }
                return sf_count_t(status.st_size)
            },
            seek: { offset, whence, user in
                let io = DescriptorIO.from(user)
                let position = lseek(io.fileDescriptor, off_t(offset), whence)
                // EINVAL is a negative offset libsndfile computed from a damaged header: the
                // content's fault, reported by libsndfile's own error, not a system failure.
                if position < 0, errno != EINVAL { io.fail(errno) }
                return sf_count_t(position)
            },
            read: { buffer, count, user in
                let io = DescriptorIO.from(user)
                guard let buffer else { return 0 }
                return io.repeatUntilDone(count) { done in Glibc.read(io.fileDescriptor, buffer + done, Int(count) - done) }
            },
            write: { bytes, count, user in
                let io = DescriptorIO.from(user)
                guard let bytes else { return 0 }
                return io.repeatUntilDone(count) { done in Glibc.write(io.fileDescriptor, bytes + done, Int(count) - done) }
            },
            tell: { user in
                let io = DescriptorIO.from(user)
                return sf_count_t(lseek(io.fileDescriptor, 0, SEEK_CUR))
            }
        )
    }
}
