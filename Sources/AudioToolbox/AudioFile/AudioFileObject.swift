import CAudioToolbox
import Glibc
import QueueCore
import SoundFile
import Synchronization

/// The object behind an AudioFileID: one libsndfile file and the state Audio File Services
/// keeps for it.
///
/// Thread safety: every operation takes the object's lock for its whole duration, so one file
/// may be written from a recording thread while another thread reads its properties.
final class AudioFileObject: Sendable {
    /// What the lock protects. `@unchecked Sendable`: the `SoundFile` inside is only ever
    /// reached through `state`'s lock.
    struct State: @unchecked Sendable {
        /// nil once the file is closed.
        var sound: SoundFile?
        let path: String
        let fileType: AudioFileTypeID
        /// The container rules, for files this API may (re)write.
        let container: WritableContainer?
        /// The most audio the container's header can count (nil: no limit).
        var audioByteLimit: Int64? { container.flatMap { ContainerFile.audioByteLimit($0, path: path) } }
        var layout: PCMLayout
        var transfer: SampleTransfer
        var soundFormat: SoundFile.Format
        let canRead: Bool
        let canWrite: Bool
        /// Frames (= packets) of audio in the file.
        var frameCount: Int64
        /// Bytes written with AudioFileWriteBytes past the last whole frame; they become a frame
        /// (padded with zeros) when completed or at close.
        var pendingTail: [UInt8] = []
        /// Where libsndfile's read and write positions are, in frames; nil when unknown.
        var readPosition: Int64?
        var writePosition: Int64?
        var magicCookie: [UInt8]?
        /// A channel layout set through the API; the file's own channel map otherwise.
        var channelLayout: ChannelLayoutValue?
        var defersSizeUpdates = false

        var bytesPerFrame: Int { layout.bytesPerFrame }
        var hasAudio: Bool { frameCount > 0 || !pendingTail.isEmpty }
        var byteCount: Int64 { frameCount * Int64(bytesPerFrame) + Int64(pendingTail.count) }

        /// The open file, or kAudioFileNotOpenError.
        func openSound() throws(AudioToolboxError) -> SoundFile {
            guard let sound else { throw AudioToolboxError(kAudioFileNotOpenError, "the file is closed") }
            return sound
        }
    }

    let state: Mutex<State>

    init(_ state: State) {
        self.state = Mutex(state)
    }

    /// Runs `body` with the state locked.
    func withState<Result>(_ body: (inout State) throws -> Result) throws -> Result {
        try state.withLock { state in try body(&state) }
    }
}

// MARK: - Create and open

extension AudioFileObject {
    /// Creates a file of `fileType` holding data in `format`.
    /// - Throws: 'typ?', 'fmt?' before the file system is touched; dupFNErr when the file exists
    ///   and `eraseFile` is false; the POSIX errors of creating the file.
    static func create(path: String, fileType: AudioFileTypeID, format: AudioStreamBasicDescription,
                       eraseFile: Bool) throws -> AudioFileObject {
        guard let container = WritableContainer(typeID: fileType) else {
            throw AudioToolboxError(kAudioFileUnsupportedFileTypeError,
                                    "jaq cannot write files of type \(fourCharacterCode(fileType))")
        }
        let layout = try PCMLayout(validating: format)
        let storage = try container.storage(for: layout)
        try refuseDirectory(path)
        let sound = try openForWriting(path: path, container: container, layout: layout, format: storage.format, replacing: eraseFile)
        return AudioFileObject(State(
            sound: sound, path: path, fileType: fileType, container: container, layout: layout,
            transfer: storage.transfer, soundFormat: storage.format, canRead: container.opensForReadWrite,
            canWrite: true, frameCount: 0, readPosition: 0, writePosition: 0))
    }

    /// '!pth' when `path` names a directory (creating a file there would fail with EISDIR
    /// only after the erase).
    static func refuseDirectory(_ path: String) throws(AudioToolboxError) {
        var status = stat()
        if stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFDIR {
            throw AudioToolboxError(kAudio_BadFilePathError, "\(path) is a directory")
        }
    }

    /// Creates (or re-creates) the libsndfile file of a writable container, its header
    /// brought up to date after every write (unless DeferSizeUpdates says otherwise).
    fileprivate static func openForWriting(path: String, container: WritableContainer, layout: PCMLayout,
                                           format: SoundFile.Format, replacing: Bool) throws -> SoundFile {
        do {
            return try ContainerFile.create(path: path, container: container, layout: layout, format: format,
                                            replacing: replacing, readable: true, headerUpdates: .everyWrite)
        } catch {
            guard error.errno == nil else { throw error }
            throw AudioToolboxError(kAudioFileUnsupportedDataFormatError, "libsndfile cannot write this format: \(error.reason)")
        }
    }

    /// Opens an existing file.
    /// - Throws: the POSIX errors of opening it; 'dta?' for a damaged file of a known type,
    ///   'typ?' for content of no known type; 'op??' for write access to a file libsndfile can
    ///   only read.
    static func open(path: String, permissions: Int8) throws -> AudioFileObject {
        let canRead = permissions & AudioFilePermissions.readPermission.rawValue != 0
        let canWrite = permissions & AudioFilePermissions.writePermission.rawValue != 0
        guard canRead || canWrite, permissions & ~3 == 0 else {
            throw AudioToolboxError(kAudio_ParamError, "permissions must be read, write or read-write")
        }
        try HeaderCheck.check(path: path, forWriting: false)
        var sound: SoundFile
        do {
            sound = try SoundFile(path: path, mode: .read)
        } catch {
            guard error.errno == nil else { throw error }
            let header = leadingBytes(path)
            if FileSignature.isRecognised(header) {
                throw AudioToolboxError(kAudioFileInvalidFileError, "damaged or truncated file: \(error.reason)")
            }
            throw AudioToolboxError(kAudioFileUnsupportedFileTypeError, "not an audio file of a known type: \(error.reason)")
        }
        let header = leadingBytes(path)
        let hostIsLittleEndian = 1.littleEndian == 1
        let presentation = FilePresentation.of(sound.info, rawBigEndian: sound.rawDataNeedsEndianSwap == hostIsLittleEndian)
        let frameCount = try plausibleFrameCount(&sound, path: path, presentation)
        let fileType = FilePresentation.fileTypeID(sound.info.format, header: header)
        if canWrite {
            guard presentation.transfer == .raw, FilePresentation.readWriteMajors.contains(sound.info.format.major),
                  WritableContainer(typeID: fileType) != nil
            else {
                throw AudioToolboxError(kAudioFileOperationNotSupportedError,
                                        "\(sound.info.format) files can be opened for reading only")
            }
            try HeaderCheck.check(path: path, forWriting: true)
            try sound.close()
            do {
                sound = try SoundFile(path: path, mode: .readWrite)
            } catch {
                guard error.errno == nil else { throw error }
                throw AudioToolboxError(kAudioFileOperationNotSupportedError, "libsndfile cannot write to this file: \(error.reason)")
            }
            sound.setUpdatesHeaderAutomatically(true)
        }
        return AudioFileObject(State(
            sound: sound, path: path, fileType: fileType, container: canWrite ? WritableContainer(typeID: fileType) : nil,
            layout: presentation.layout, transfer: presentation.transfer, soundFormat: sound.info.format,
            canRead: canRead, canWrite: canWrite, frameCount: frameCount))
    }

    /// The number of frames in a file libsndfile opened, checked against what the file can
    /// hold, so that every size computed from it (bytes = frames × bytes per frame) fits.
    ///
    /// libsndfile reports 2^63 − 1 frames when a header does not say (a FLAC STREAMINFO whose
    /// total is 0, an Ogg cut inside its last page); then, and when the header claims more
    /// frames than an encoded file of this size can hold, the frames are counted by decoding
    /// the file once and `sound` is reopened at its start. Stored PCM claiming more frames than
    /// the file has bytes for is cut to the whole frames present (a truncated recording).
    /// - Throws: 'dta?' for a rate, channel count or frame count no file can have.
    private static func plausibleFrameCount(_ sound: inout SoundFile, path: String,
                                            _ presentation: (layout: PCMLayout, transfer: SampleTransfer)) throws -> Int64 {
        let info = sound.info
        guard info.sampleRate > 0, (1...1024).contains(info.channelCount) else {
            throw AudioToolboxError(kAudioFileInvalidFileError,
                                    "damaged header: \(info.channelCount) channels at \(info.sampleRate) Hz")
        }
        let bytesPerFrame = Int64(presentation.layout.bytesPerFrame)
        let fileBytes = sound.fileByteCount
        var frames = info.frameCount
        if presentation.transfer == .raw {
            guard frames >= 0, frames != Int64.max else {
                throw AudioToolboxError(kAudioFileInvalidFileError, "damaged header: \(frames) frames")
            }
            return min(frames, fileBytes / bytesPerFrame)
        }
        // An encoded frame takes at least a few bits, except in FLAC's constant blocks (a
        // 65535-frame block of silence is a few bytes): 65536 frames a byte is beyond any codec.
        let (limit, limitOverflows) = max(fileBytes, 1).multipliedReportingOverflow(by: 65536)
        if frames < 0 || frames == Int64.max || (!limitOverflows && frames > limit) {
            frames = sound.countFramesByDecoding()
            let mode = sound.mode
            try sound.close()
            sound = try SoundFile(path: path, mode: mode)
        }
        // 2^62 bytes at most, so that byte positions plus a UInt32 count never overflow.
        let (bytes, overflow) = frames.multipliedReportingOverflow(by: bytesPerFrame)
        guard !overflow, bytes <= 1 << 62 else {
            throw AudioToolboxError(kAudioFileInvalidFileError, "damaged header: \(frames) frames")
        }
        return frames
    }

    /// The first bytes of the file at `path` (fewer if it is shorter or unreadable).
    private static func leadingBytes(_ path: String) -> [UInt8] {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return [] }
        defer { Glibc.close(fd) }
        var bytes = [UInt8](repeating: 0, count: 16)
        let count = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        return Array(bytes.prefix(max(count, 0)))
    }
}

// MARK: - Close

extension AudioFileObject {
    /// Writes what is pending and closes the file (libsndfile brings the header up to date).
    func close() throws {
        try withState { state in
            let sound = try state.openSound()
            defer { state.sound = nil }
            var failure: Error?
            if !state.pendingTail.isEmpty {
                let frame = state.pendingTail + [UInt8](repeating: 0, count: state.bytesPerFrame - state.pendingTail.count)
                let end = state.frameCount
                do {
                    failure = try frame.withUnsafeBytes { try Self.writeFrames(&state, sound, at: end, bytes: $0) }.error
                } catch { failure = error }
            }
            do { try sound.close() } catch { failure = failure ?? error }
            if let failure { throw failure }
        }
    }
}

// MARK: - Packets

extension AudioFileObject {
    /// Reads up to `packetCount` packets from `startPacket`, no more than fit in `capacity` bytes.
    /// - Returns: packets read, and whether the read stopped short at the end of the file.
    func readPackets(from startPacket: Int64, count packetCount: Int, capacity: Int,
                     into buffer: UnsafeMutableRawPointer) throws -> (packets: Int, reachedEnd: Bool) {
        try withState { state in
            let sound = try state.openSound()
            guard state.canRead else {
                throw AudioToolboxError(kAudioFilePermissionsError, "the file is not open for reading")
            }
            guard startPacket >= 0, startPacket <= state.frameCount else {
                throw AudioToolboxError(kAudioFileInvalidPacketOffsetError,
                                        "packet \(startPacket) is outside 0...\(state.frameCount)")
            }
            let wanted = min(packetCount, capacity / state.bytesPerFrame)
            let count = Int(min(Int64(wanted), state.frameCount - startPacket))
            let read = try Self.readFrames(&state, sound, at: startPacket, count: count, into: buffer)
            // At the end when fewer packets came than were asked for, because the file ended
            // (even if the buffer was also full): a caller's read loop always terminates.
            let atEnd = read < packetCount && (read < wanted || startPacket + Int64(read) >= state.frameCount)
            return (read, atEnd)
        }
    }

    /// Writes `packetCount` packets at `startPacket` (at most the current end).
    /// - Returns: packets written, and the error that stopped the write short (a full disk).
    func writePackets(at startPacket: Int64, count packetCount: Int, from bytes: UnsafeRawPointer) throws -> (packets: Int, error: Error?) {
        try withState { state in
            let sound = try state.openSound()
            try Self.requireWritable(state, at: startPacket, .packet)
            let data = UnsafeRawBufferPointer(start: bytes, count: packetCount * state.bytesPerFrame)
            return try Self.writeFrames(&state, sound, at: startPacket, bytes: data)
        }
    }

    /// What a write position counts.
    fileprivate enum Unit: String {
        case packet, byte
    }

    /// Checks that the file is writable and that a write at `start` leaves no gap.
    fileprivate static func requireWritable(_ state: State, at start: Int64, _ unit: Unit) throws(AudioToolboxError) {
        guard state.canWrite else {
            throw AudioToolboxError(kAudioFilePermissionsError, "the file is not open for writing")
        }
        let end = unit == .packet ? state.frameCount : state.byteCount
        guard start >= 0, start <= end else {
            let status = unit == .packet ? kAudioFileInvalidPacketOffsetError : kAudioFilePositionError
            throw AudioToolboxError(status, "\(unit.rawValue) \(start) is outside 0...\(end): writes may not leave a gap")
        }
    }

    /// Reads `count` whole frames at `start` in the data format.
    fileprivate static func readFrames(_ state: inout State, _ sound: SoundFile, at start: Int64, count: Int,
                                       into buffer: UnsafeMutableRawPointer) throws -> Int {
        guard count > 0 else { return 0 }
        if state.readPosition != start {
            state.readPosition = nil
            try sound.seek(toFrame: start, for: .read)
        }
        let moved = state.transfer.read(sound, frames: count, bytesPerFrame: state.bytesPerFrame, into: buffer)
        state.readPosition = start + Int64(moved.count)
        if sound.mode == .readWrite { state.writePosition = nil }
        if let error = moved.error, moved.count < count { throw error }
        return moved.count
    }

    /// Writes whole frames at `start` (at most the current end), keeping the frame count and
    /// the pending tail in step.
    /// - Returns: frames written, and the error that stopped the write short (what was written stays).
    /// - Throws: when nothing could be attempted (seek failed, order required).
    fileprivate static func writeFrames(_ state: inout State, _ sound: SoundFile, at start: Int64,
                                        bytes: UnsafeRawBufferPointer) throws -> (packets: Int, error: Error?) {
        let wanted = bytes.count / state.bytesPerFrame
        guard wanted > 0 else { return (0, nil) }
        // A header that counts bytes in 32 bits takes what fits; the rest is refused, not
        // wrapped around (libsndfile would write sizes modulo 4 GiB: a file that opens short).
        let limit = state.audioByteLimit
        let count = ContainerFile.framesWithin(limit, start: start, frames: wanted, bytesPerFrame: state.bytesPerFrame)
        let full = count < wanted ? AudioToolboxError(
            kAudioFileDoesNotAllow64BitDataSizeError,
            "\(state.container?.name ?? "these") files hold at most \(limit ?? 0) bytes of audio: use RF64, Wave64 or CAF for longer audio") : nil
        guard count > 0 else { return (0, full) }
        if state.writePosition != start {
            guard sound.mode == .readWrite else {
                throw AudioToolboxError(kAudioFileOperationNotSupportedError,
                                        "\(state.soundFormat.majorName) files are written in order: the next packet is \(state.frameCount)")
            }
            state.writePosition = nil
            try sound.seek(toFrame: start, for: .write)
        }
        let moved = state.transfer.write(sound, frames: count, bytesPerFrame: state.bytesPerFrame, from: bytes.baseAddress!)
        let end = start + Int64(moved.count)
        state.writePosition = end
        if sound.mode == .readWrite { state.readPosition = nil }
        if end > state.frameCount {
            state.frameCount = end
            state.pendingTail = []
        }
        if moved.count < count { return (moved.count, moved.error ?? SoundFileError.system(EIO, "short write")) }
        return (moved.count, full)
    }
}

// MARK: - Bytes

extension AudioFileObject {
    /// Reads bytes of audio data (in the data format) from `start`, any alignment.
    /// - Returns: bytes read and whether the read stopped short at the end of the data.
    func readBytes(from start: Int64, count: Int, into buffer: UnsafeMutableRawPointer) throws -> (bytes: Int, reachedEnd: Bool) {
        try withState { state in
            let sound = try state.openSound()
            guard state.canRead else {
                throw AudioToolboxError(kAudioFilePermissionsError, "the file is not open for reading")
            }
            guard start >= 0, start <= state.byteCount else {
                throw AudioToolboxError(kAudioFilePositionError, "byte \(start) is outside 0...\(state.byteCount)")
            }
            let bpf = Int64(state.bytesPerFrame)
            let end = min(start + Int64(count), state.byteCount)
            let frameBytesEnd = min(end, state.frameCount * bpf)
            var done = 0
            if start < frameBytesEnd {
                let first = start / bpf
                let last = (frameBytesEnd + bpf - 1) / bpf
                var frames = [UInt8](repeating: 0, count: Int((last - first) * bpf))
                let read = try frames.withUnsafeMutableBytes {
                    try Self.readFrames(&state, sound, at: first, count: Int(last - first), into: $0.baseAddress!)
                }
                let available = min(frameBytesEnd, (first + Int64(read)) * bpf) - start
                frames.withUnsafeBytes {
                    buffer.copyMemory(from: $0.baseAddress! + Int(start - first * bpf), byteCount: Int(max(available, 0)))
                }
                done = Int(max(available, 0))
                if done < Int(frameBytesEnd - start) { return (done, true) }
            }
            let tailStart = max(start, state.frameCount * bpf)
            if tailStart < end {
                let offset = Int(tailStart - state.frameCount * bpf)
                state.pendingTail[offset..<offset + Int(end - tailStart)].withUnsafeBytes {
                    (buffer + done).copyMemory(from: $0.baseAddress!, byteCount: $0.count)
                }
                done += Int(end - tailStart)
            }
            return (done, done < count)
        }
    }

    /// Writes bytes of audio data at `start` (at most the current end), any alignment: partial
    /// frames inside the file are read, patched and rewritten; a partial frame at the end waits
    /// in memory for the rest of its bytes (or for close, which pads it with zeros).
    /// - Returns: bytes written, and the error that stopped the write short.
    func writeBytes(at start: Int64, from bytes: UnsafeRawBufferPointer) throws -> (bytes: Int, error: Error?) {
        try withState { state in
            let sound = try state.openSound()
            try Self.requireWritable(state, at: start, .byte)
            let bpf = Int64(state.bytesPerFrame)
            let end = start + Int64(bytes.count)
            do {
                // Whole frames already in the file that the range touches.
                let fileBytes = state.frameCount * bpf
                if start < fileBytes {
                    let first = start / bpf
                    let last = (min(end, fileBytes) + bpf - 1) / bpf
                    var frames = [UInt8](repeating: 0, count: Int((last - first) * bpf))
                    guard sound.mode == .readWrite else {
                        throw AudioToolboxError(kAudioFileOperationNotSupportedError,
                                                "\(state.soundFormat.majorName) files are written in order: the next byte is \(state.byteCount)")
                    }
                    if start % bpf != 0 || min(end, fileBytes) % bpf != 0 {
                        _ = try frames.withUnsafeMutableBytes {
                            try Self.readFrames(&state, sound, at: first, count: Int(last - first), into: $0.baseAddress!)
                        }
                    }
                    let inside = Int(min(end, fileBytes) - start)
                    frames.withUnsafeMutableBytes {
                        ($0.baseAddress! + Int(start - first * bpf)).copyMemory(from: bytes.baseAddress!, byteCount: inside)
                    }
                    if let error = try frames.withUnsafeBytes({ try Self.writeFrames(&state, sound, at: first, bytes: $0) }).error {
                        throw error
                    }
                }
                // Bytes at and past the last whole frame join the pending tail.
                let tailStart = max(start, fileBytes)
                if tailStart < end {
                    var tail = state.pendingTail
                    let offset = Int(tailStart - fileBytes)
                    let source = bytes[Int(tailStart - start)...]
                    if tail.count < offset + source.count { tail += [UInt8](repeating: 0, count: offset + source.count - tail.count) }
                    tail.replaceSubrange(offset..<offset + source.count, with: source)
                    let whole = tail.count - tail.count % Int(bpf)
                    state.pendingTail = []
                    let frameCount = state.frameCount
                    if let error = try tail[..<whole].withUnsafeBytes({ try Self.writeFrames(&state, sound, at: frameCount, bytes: $0) }).error {
                        throw error
                    }
                    state.pendingTail = Array(tail[whole...])
                }
                return (bytes.count, nil)
            } catch {
                return (Int(max(0, min(Int64(bytes.count), state.byteCount - start))), error)
            }
        }
    }
}

// MARK: - Changing the data format and channel layout before audio is written

extension AudioFileObject {
    /// Re-creates the (still empty) file with a new layout and libsndfile format.
    static func recreate(_ state: inout State, layout: PCMLayout, format: SoundFile.Format, transfer: SampleTransfer) throws {
        guard let container = state.container else {
            throw AudioToolboxError(kAudioFileOperationNotSupportedError, "this file's format cannot be changed")
        }
        try state.openSound().close()
        state.sound = nil
        state.sound = try openForWriting(path: state.path, container: container, layout: layout, format: format, replacing: true)
        if container.updatesHeaderWhileWriting { state.sound?.setUpdatesHeaderAutomatically(!state.defersSizeUpdates) }
        state.layout = layout
        state.soundFormat = format
        state.transfer = transfer
        state.readPosition = 0
        state.writePosition = 0
    }
}
