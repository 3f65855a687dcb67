import CSndFile
import Glibc

/// A sound file open through libsndfile: typed and raw reads and writes, seeking, and the
/// `sf_command` settings jaq needs.
///
/// The file is reached through a file descriptor this object owns and libsndfile's virtual I/O,
/// so a failed system call is reported with its own `errno` (ENOSPC, EFBIG, EIO...) rather than
/// only as "short write".
///
/// Thread safety: none. Use one `SoundFile` from one thread at a time (AudioToolbox puts each
/// behind a lock).
public final class SoundFile {
    /// How the file is opened (`SFM_READ`, `SFM_WRITE`, `SFM_RDWR`).
    public enum Mode: Sendable {
        case read, write, readWrite

        var cValue: Int32 {
            switch self {
            case .read: Int32(SFM_READ)
            case .write: Int32(SFM_WRITE)
            case .readWrite: Int32(SFM_RDWR)
            }
        }
    }

    /// Which position a seek moves in a file open for reading and writing.
    public enum SeekTarget: Sendable {
        case read, write, both
    }

    /// How much a read or write moved, and the error that stopped it short, if any.
    public struct Transfer: Sendable {
        /// Frames (typed I/O) or bytes (raw I/O) transferred.
        public let count: Int
        /// Why fewer than requested were transferred; nil at the end of the file.
        public let error: SoundFileError?

        public init(count: Int, error: SoundFileError?) {
            self.count = count
            self.error = error
        }
    }

    /// The mode the file was opened in.
    public let mode: Mode
    /// The file's format, rate and channels, and its frame count when it was opened.
    public let info: Info

    private(set) var handle: OpaquePointer?
    private let io: DescriptorIO
    /// The end (a byte offset) of the space `reserveSpace` reserved, 0 if none: what the file
    /// has not reached by `close` is given back.
    private var reservedEnd: Int64 = 0
    /// The file system the file is on, once `fileSystemID` has asked.
    private var fileSystem: UInt64?

    /// Opens the file at `path`.
    ///
    /// - Parameters:
    ///   - mode: read, write or both.
    ///   - format: nil to open an existing file (`.read`, `.readWrite`); the format, rate and
    ///     channels of a new file to create (`.write`, `.readWrite`).
    ///   - replacing: when creating, whether an existing file is replaced (true) or the open
    ///     fails with `EEXIST` and the file is left untouched (false).
    /// - Throws: `SoundFileError` with `errno` when the file cannot be opened (ENOENT, EACCES,
    ///   EISDIR for a directory, EINVAL for another kind of non-regular file); libsndfile's
    ///   error when it cannot read or create the format. A file this call created is removed
    ///   again when libsndfile refuses it.
    public convenience init(path: String, mode: Mode, format: Info? = nil, replacing: Bool = true) throws(SoundFileError) {
        var flags = (mode == .read ? O_RDONLY : O_RDWR) | O_CLOEXEC | O_NONBLOCK
        if format != nil {
            // A FIFO, device or socket in the way is refused before O_TRUNC can touch it.
            var existing = stat()
            if replacing, stat(path, &existing) == 0 {
                try Self.requireRegularFile(mode: existing.st_mode)
            }
            flags |= O_CREAT | (replacing ? O_TRUNC : O_EXCL)
        }
        let fd = Glibc.open(path, flags, 0o666)
        guard fd >= 0 else { throw .system(errno, path) }
        var isRegular = false
        do throws(SoundFileError) {
            let status = try Self.requireRegularFile(fd)
            isRegular = true
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
            // A file opened here to be written is this object's alone: its offset is kept in
            // memory (DescriptorIO), from 0 and the size just found. One only read may be
            // growing under another writer.
            try self.init(io: DescriptorIO(fileDescriptor: fd, closesDescriptor: true, tracksOffset: mode != .read,
                                           openedWith: status),
                          mode: mode, format: format)
        } catch {
            Glibc.close(fd)
            // Only a regular file this call made (or emptied) is removed: never a node that
            // appeared at the path in between (a FIFO, /dev/null).
            if format != nil, isRegular { unlink(path) }
            throw error
        }
    }

    /// Opens a sound file on an open file descriptor, from its current offset 0.
    ///
    /// - Parameters:
    ///   - format: nil to read an existing file; the format of a new file to write.
    ///   - closesDescriptor: whether `close()` closes `fileDescriptor`.
    public convenience init(fileDescriptor: Int32, mode: Mode, format: Info? = nil, closesDescriptor: Bool) throws(SoundFileError) {
        try self.init(io: DescriptorIO(fileDescriptor: fileDescriptor, closesDescriptor: closesDescriptor), mode: mode, format: format)
    }

    private init(io: DescriptorIO, mode: Mode, format: Info?) throws(SoundFileError) {
        self.mode = mode
        self.io = io
        var cInfo = format?.cValue ?? SF_INFO()
        handle = try Self.openHandle(io, mode: mode, info: &cInfo)
        guard let opened = Info(cInfo) else {
            sf_close(handle)
            handle = nil
            throw SoundFileError(code: .unsupportedEncoding, reason: "format 0x\(String(cInfo.format, radix: 16)) is unknown to jaq")
        }
        info = opened
        seeksByDecoding = mode == .read && opened.format.major == .ogg
    }

    private static func openHandle(_ io: DescriptorIO, mode: Mode, info: inout SF_INFO) throws(SoundFileError) -> OpaquePointer {
        var callbacks = DescriptorIO.callbacks
        guard let handle = sf_open_virtual(&callbacks, mode.cValue, &info, Unmanaged.passUnretained(io).toOpaque()) else {
            throw io.takeError() ?? SoundFileError.library(nil)
        }
        return handle
    }

    /// Whether a seek decodes from the start instead of calling `sf_seek`: libsndfile's Ogg
    /// page search hands damaged pages to libvorbis, which crashes (SIGSEGV in
    /// `vorbis_synthesis_trackonly`) where decoding the same stream in order stops cleanly.
    private let seeksByDecoding: Bool
    /// The frame the next read starts at, kept while `seeksByDecoding`.
    private var readFrame: Int64 = 0

    deinit {
        if handle != nil { try? close() }
    }

    /// Closes the file: libsndfile writes the final header, then the descriptor is closed.
    /// - Throws: the first error of the two.
    public func close() throws(SoundFileError) {
        guard let handle else { return }
        self.handle = nil
        io.resetError()
        let status = sf_close(handle)
        var failure = io.takeError()
        // Space reserved past the last frame (`reserveSpace` keeps the size) is given back:
        // truncating to the size it has frees the blocks past it, which a finished take would
        // otherwise keep (a 2 s take of one track held 444 KiB on disk for 376 KiB of data).
        // A file that reached the reservation's end has none past it, and is not truncated: on
        // ext4 a truncate to the same size is still a journalled transaction (issue #29: 64
        // of them were about 1 ms of a 64-track take).
        if reservedEnd > 0 {
            var status = stat()
            if fstat(io.fileDescriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG,
               Int64(status.st_size) < reservedEnd {
                _ = ftruncate(io.fileDescriptor, status.st_size)
            }
        }
        if status != 0, failure == nil {
            failure = SoundFileError(code: SoundFileError.Code(rawValue: status), reason: String(cString: sf_error_number(status)))
        }
        if io.closesDescriptor, Glibc.close(io.fileDescriptor) != 0, failure == nil {
            failure = .system(errno, "close")
        }
        if let failure { throw failure }
    }

    /// Whether the file is still open.
    public var isOpen: Bool { handle != nil }

    /// The number of frames in the file now (it grows as a file being written grows).
    public var frameCount: Int64 {
        var current = SF_INFO()
        sf_command(handle, Int32(SFC_GET_CURRENT_SF_INFO), &current, Int32(MemoryLayout<SF_INFO>.size))
        return current.frames
    }

    /// Moves the read and/or write position to `frame`.
    /// - Returns: the new position.
    @discardableResult
    public func seek(toFrame frame: Int64, for target: SeekTarget = .both) throws(SoundFileError) -> Int64 {
        var whence = SEEK_SET
        if mode == .readWrite {
            switch target {
            case .read: whence |= Int32(SFM_READ)
            case .write: whence |= Int32(SFM_WRITE)
            case .both: break
            }
        }
        io.resetError()
        if seeksByDecoding { return try seekByDecoding(to: frame) }
        let position = sf_seek(handle, frame, whence)
        guard position >= 0 else { throw io.takeError() ?? .library(handle) }
        return position
    }

    /// Moves the read position by decoding: backwards by opening the stream again at its start,
    /// forwards by reading and dropping frames. Costs the decoding of the frames skipped.
    private func seekByDecoding(to frame: Int64) throws(SoundFileError) -> Int64 {
        guard frame >= 0 else { throw SoundFileError(code: .system, reason: "seek to frame \(frame)", errno: EINVAL) }
        if frame < readFrame {
            sf_close(handle)
            handle = nil
            readFrame = 0
            do throws(SoundFileError) {
                guard lseek(io.fileDescriptor, 0, SEEK_SET) == 0 else { throw .system(errno, "lseek") }
                var cInfo = SF_INFO()
                handle = try Self.openHandle(io, mode: mode, info: &cInfo)
            } catch {
                // The file changed under us: it stays closed (reads say so), its descriptor too.
                if io.closesDescriptor { Glibc.close(io.fileDescriptor) }
                throw error
            }
        }
        var scratch = [Float](repeating: 0, count: 4096 * max(info.channelCount, 1))
        while readFrame < frame {
            let wanted = Int(min(frame - readFrame, 4096)) * max(info.channelCount, 1)
            let moved = scratch.withUnsafeMutableBufferPointer { readFrames(into: UnsafeMutableBufferPointer(rebasing: $0[..<wanted])) }
            if let error = moved.error { throw error }
            if moved.count == 0 { throw SoundFileError(code: .malformedFile, reason: "the stream ends before frame \(frame)") }
        }
        return readFrame
    }

    /// Reads the file's sample bytes as they are stored (`sf_read_raw`); `buffer.count` must be
    /// a whole number of frames. Only meaningful for uncompressed PCM, float, µ-law and A-law.
    public func readRaw(into buffer: UnsafeMutableRawBufferPointer) -> Transfer {
        transfer { sf_read_raw(handle, buffer.baseAddress, sf_count_t(buffer.count)) }
    }

    /// Writes sample bytes as they are to be stored (`sf_write_raw`); a whole number of frames.
    public func writeRaw(_ bytes: UnsafeRawBufferPointer) -> Transfer {
        transfer { sf_write_raw(handle, bytes.baseAddress, sf_count_t(bytes.count)) }
    }

    /// Reads interleaved frames converted to `Sample` (`sf_readf_short/int/float/double`).
    /// `buffer.count` must be a multiple of the channel count; `count` is in frames.
    public func readFrames<Sample: SoundFileSample>(into buffer: UnsafeMutableBufferPointer<Sample>) -> Transfer {
        let frames = sf_count_t(buffer.count / max(info.channelCount, 1))
        let base = UnsafeMutableRawPointer(buffer.baseAddress)
        let moved = transfer {
            switch Sample.kind {
            case .int16: sf_readf_short(handle, base?.assumingMemoryBound(to: Int16.self), frames)
            case .int32: sf_readf_int(handle, base?.assumingMemoryBound(to: Int32.self), frames)
            case .float: sf_readf_float(handle, base?.assumingMemoryBound(to: Float.self), frames)
            case .double: sf_readf_double(handle, base?.assumingMemoryBound(to: Double.self), frames)
            }
        }
        readFrame += Int64(moved.count)
        return moved
    }

    /// Writes interleaved frames of `Sample` (`sf_writef_short/int/float/double`); libsndfile
    /// converts them to the file's encoding. `count` is in frames.
    public func writeFrames<Sample: SoundFileSample>(_ buffer: UnsafeBufferPointer<Sample>) -> Transfer {
        let frames = sf_count_t(buffer.count / max(info.channelCount, 1))
        let base = UnsafeRawPointer(buffer.baseAddress)
        return transfer {
            switch Sample.kind {
            case .int16: sf_writef_short(handle, base?.assumingMemoryBound(to: Int16.self), frames)
            case .int32: sf_writef_int(handle, base?.assumingMemoryBound(to: Int32.self), frames)
            case .float: sf_writef_float(handle, base?.assumingMemoryBound(to: Float.self), frames)
            case .double: sf_writef_double(handle, base?.assumingMemoryBound(to: Double.self), frames)
            }
        }
    }

    private func transfer(_ body: () -> sf_count_t) -> Transfer {
        guard handle != nil else {
            return Transfer(count: 0, error: SoundFileError(code: .system, reason: "the file is closed", errno: EBADF))
        }
        io.resetError()
        let count = body()
        if let failure = io.takeError() { return Transfer(count: max(Int(count), 0), error: failure) }
        if count < 0 || sf_error(handle) != 0 { return Transfer(count: max(Int(count), 0), error: .library(handle)) }
        return Transfer(count: Int(count), error: nil)
    }

    /// The status of `fd`, which must be a regular file.
    private static func requireRegularFile(_ fd: Int32) throws(SoundFileError) -> stat {
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw .system(errno, "fstat") }
        try requireRegularFile(mode: status.st_mode)
        return status
    }

    private static func requireRegularFile(mode: mode_t) throws(SoundFileError) {
        switch mode & S_IFMT {
        case S_IFREG: return
        case S_IFDIR: throw .system(EISDIR)
        default: throw SoundFileError(code: .system, reason: "not a regular file", errno: EINVAL)
        }
    }
}

// MARK: - sf_command settings

extension SoundFile {
    /// Rewrites the header now so that it describes every frame written (`SFC_UPDATE_HEADER_NOW`).
    public func updateHeaderNow() {
        sf_command(handle, Int32(SFC_UPDATE_HEADER_NOW), nil, 0)
    }

    /// Whether libsndfile rewrites the header after every write (`SFC_SET_UPDATE_HEADER_AUTO`),
    /// so that the file is complete at any moment. Returns the setting now in effect.
    @discardableResult
    public func setUpdatesHeaderAutomatically(_ enabled: Bool) -> Bool {
        sf_command(handle, Int32(SFC_SET_UPDATE_HEADER_AUTO), nil, enabled ? 1 : 0) != 0
    }

    /// For an RF64 file being written: write it as plain WAV at close if it stayed under
    /// 4 GiB (`SFC_RF64_AUTO_DOWNGRADE`). Set before the first write.
    @discardableResult
    public func setRF64AutoDowngrade(_ enabled: Bool) -> Bool {
        sf_command(handle, Int32(SFC_RF64_AUTO_DOWNGRADE), nil, enabled ? 1 : 0) != 0
    }

    /// Flushes what was written to the disk (`fsync`), so a power loss keeps it.
    /// - Throws: `SoundFileError` with `errno` (EIO, ENOSPC) if the disk refuses.
    public func synchronize() throws(SoundFileError) {
        // Not sf_write_sync: it flushes nothing of libsndfile's own, only fsyncs the descriptor
        // libsndfile opened, which under virtual I/O is -1 (issue #29 saw it fail each second).
        guard handle != nil else { return }
        if fsync(io.fileDescriptor) != 0 { throw .system(errno, "fsync") }
    }

    /// glibc's `syncfs` (a GNU extension the Glibc module does not export), looked up once.
    private static let syncfs: (@convention(c) (Int32) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "syncfs") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int32) -> Int32).self)
    }()

    /// The file system the file is on (`st_dev`), to flush many files with one `syncfs`. Asked
    /// once: an open file stays on its file system.
    public var fileSystemID: UInt64? {
        guard handle != nil else { return nil }
        if let fileSystem { return fileSystem }
        var status = stat()
        guard fstat(io.fileDescriptor, &status) == 0 else { return nil }
        fileSystem = UInt64(status.st_dev)
        return fileSystem
    }

    /// Flushes everything written to the file system this file is on (`syncfs`): one call
    /// for all the files of a take instead of an `fsync` each.
    /// - Throws: `SoundFileError` with `errno` if the disk refuses.
    public func synchronizeFileSystem() throws(SoundFileError) {
        guard handle != nil else { return }
        guard let syncfs = SoundFile.syncfs else { return try synchronize() }
        if syncfs(io.fileDescriptor) != 0 { throw .system(errno, "syncfs") }
    }

    /// glibc's `fallocate` (a GNU extension the Glibc module does not export), looked up once.
    private static let fallocate: (@convention(c) (Int32, Int32, Int64, Int64) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "fallocate") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32, Int64, Int64) -> Int32).self)
    }()

    /// Reserves disk space for the next `byteCount` bytes written at the end of the file,
    /// without changing its size (`fallocate` with `FALLOC_FL_KEEP_SIZE`): once it succeeds,
    /// writing those bytes cannot fail for want of space. Several files written in step
    /// reserve first, so that a full disk stops them all on the same frame. What is still
    /// unused at `close` is given back.
    /// - Returns: false if the file system cannot reserve (then writes may still fail alone).
    /// - Throws: `SoundFileError` with `errno` (ENOSPC, EFBIG) if the space is not there.
    public func reserveSpace(byteCount: Int) throws(SoundFileError) -> Bool {
        guard handle != nil, byteCount > 0, let fallocate = SoundFile.fallocate else { return false }
        var status = stat()
        guard let end = io.trackedLength ?? (fstat(io.fileDescriptor, &status) == 0 ? Int64(status.st_size) : nil) else { return false }
        let keepSize: Int32 = 1  // FALLOC_FL_KEEP_SIZE
        if fallocate(io.fileDescriptor, keepSize, end, Int64(byteCount)) == 0 {
            reservedEnd = max(reservedEnd, end + Int64(byteCount))
            return true
        }
        let code = errno
        if code == EOPNOTSUPP || code == ENOSYS || code == EINVAL { return false }
        throw .system(code, "fallocate")
    }

    /// Whether the raw bytes of multi-byte samples are in the opposite byte order to this CPU's
    /// (`SFC_RAW_DATA_NEEDS_ENDSWAP`).
    public var rawDataNeedsEndianSwap: Bool {
        sf_command(handle, Int32(SFC_RAW_DATA_NEEDS_ENDSWAP), nil, 0) != 0
    }

    /// The channel map stored in the file (`SFC_GET_CHANNEL_MAP_INFO`), nil if it has none.
    public var channelMap: [ChannelPosition]? {
        var map = [Int32](repeating: 0, count: info.channelCount)
        let found = sf_command(handle, Int32(SFC_GET_CHANNEL_MAP_INFO), &map, Int32(map.count * MemoryLayout<Int32>.size))
        guard found != 0 else { return nil }
        return map.map { ChannelPosition(rawValue: $0) ?? .invalid }
    }

    /// Stores a channel map (`SFC_SET_CHANNEL_MAP_INFO`); WAVEX, AIFF, CAF and RF64 keep it when
    /// it is set before any audio is written. Returns whether libsndfile accepted it.
    @discardableResult
    public func setChannelMap(_ positions: [ChannelPosition]) -> Bool {
        guard positions.count == info.channelCount else { return false }
        var map = positions.map(\.rawValue)
        return sf_command(handle, Int32(SFC_SET_CHANNEL_MAP_INFO), &map, Int32(map.count * MemoryLayout<Int32>.size)) != 0
    }

    /// Counts the frames from the current read position to the end by decoding them, for files
    /// whose header does not say how many there are: the frames that decode, up to the end or
    /// to damage that stops decoding. Leaves the read position there.
    public func countFramesByDecoding() -> Int64 {
        var scratch = [Float](repeating: 0, count: 4096 * max(info.channelCount, 1))
        var total: Int64 = 0
        while true {
            let moved = scratch.withUnsafeMutableBufferPointer { readFrames(into: $0) }
            total += Int64(moved.count)
            if moved.error != nil || moved.count == 0 { return total }
        }
    }

    /// The size of the whole file in bytes.
    public var fileByteCount: Int64 {
        var status = stat()
        return fstat(io.fileDescriptor, &status) == 0 ? Int64(status.st_size) : 0
    }

    /// The byte offset in the file of the first frame of audio data: the header's size, for
    /// uncompressed encodings only. Moves the read position (and, in read-write mode, the write
    /// position) to frame 0.
    public func audioDataOffset() throws(SoundFileError) -> Int64 {
        try seek(toFrame: 0, for: .both)
        return io.offset
    }
}

// MARK: - Typed samples

/// The sample types libsndfile reads and writes in interleaved frames.
public protocol SoundFileSample {
    static var kind: SoundFileSampleKind { get }
}

/// Which libsndfile function family moves a ``SoundFileSample``.
public enum SoundFileSampleKind: Sendable {
    /// `sf_readf_short`: full scale is ±32768.
    case int16
    /// `sf_readf_int`: full scale is ±2³¹; narrower integer data is left-justified.
    case int32
    /// `sf_readf_float`: ±1.0 for integer data while normalisation is on.
    case float
    /// `sf_readf_double`.
    case double
}

extension Int16: SoundFileSample { public static var kind: SoundFileSampleKind { .int16 } }
extension Int32: SoundFileSample { public static var kind: SoundFileSampleKind { .int32 } }
extension Float: SoundFileSample { public static var kind: SoundFileSampleKind { .float } }
extension Double: SoundFileSample { public static var kind: SoundFileSampleKind { .double } }
