import AudioCodec
import CAudioToolbox
import CFFmpeg
import Glibc
import QueueCore
import SoundFile
import Synchronization

/// An AudioFileID of compressed packets: CAF of any compressed format (read and written here),
/// MPEG-4 audio (.m4a, .mp4: AAC, ALAC; indexed and written through libavformat) and ADTS
/// (AAC; indexed through libavformat, written here) and MP3 (MPEG layer III; indexed through
/// libavformat, read only: MP3 files are written from linear PCM by libsndfile).
///
/// Packets are read from the file with `pread` at the offsets of the packet index built at
/// open, so reads are exact and cheap and need no demuxer state. Packets are written as they
/// come: CAF and ADTS straight to the file, MPEG-4 through libavformat's muxer.
///
/// Thread safety: every operation takes the object's lock for its whole duration.
final class PacketAudioFile: AudioFileHandle {
    enum Container: Equatable, Sendable {
        case caf
        /// libavformat's muxer name ("ipod" for .m4a, "mp4").
        case mpeg4(muxer: String)
        case adts
        /// MPEG-1/2/2.5 layer III frames (an .mp3 file), with or without an ID3v2 tag.
        case mp3
    }

    struct State: @unchecked Sendable {
        var isOpen = true
        /// The file, for reading packets and for writing CAF and ADTS; -1 for MPEG-4 writes.
        var fd: Int32
        let path: String
        let fileType: AudioFileTypeID
        let container: Container
        let compressed: PacketFormat
        var format: AudioStreamBasicDescription
        var index: PacketIndex
        var cookie: [UInt8]?
        var channelLayout: ChannelLayoutValue?
        let canRead: Bool
        let canWrite: Bool
        /// Where the audio data starts (CAF: after the data chunk's edit count).
        var dataOffset: Int64
        var cafWriter: CAFPacketWriter?
        var mediaWriter: MediaFileWriter?
        /// Bits per second the container declares (0 when it does not).
        var declaredBitRate: Int64 = 0
        var sourceBitDepth: Int = 0
    }

    let state: Mutex<State>

    init(_ state: State) {
        self.state = Mutex(state)
    }

    /// Runs `body` with the state locked, on an open file.
    func withOpenState<Result>(_ body: (inout State) throws -> Result) throws -> Result {
        try state.withLock { state in
            guard state.isOpen else { throw AudioToolboxError(kAudioFileNotOpenError, "the file is closed") }
            return try body(&state)
        }
    }
}

// MARK: - Which files

extension PacketAudioFile {
    /// The container of packets the file at `path` is, from its first bytes; nil for files
    /// libsndfile presents (PCM CAF, WAVE, FLAC, Ogg, MPEG layer I and II...).
    static func container(ofFileAt path: String) -> Container? {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { Glibc.close(fd) }
        let reader = ChunkReader(fd: fd)
        guard var header = reader.bytes(at: 0, count: 12) else { return nil }
        if FileSignature.matches(header, "caff", at: 0) { return CAFPackets.holdsPackets(fd: fd) ? .caf : nil }
        if FileSignature.matches(header, "ftyp", at: 4) { return .mpeg4(muxer: "ipod") }
        // An ID3v2 tag (10 bytes, a 28-bit "syncsafe" size, a 10-byte footer when flagged)
        // before MP3 or ADTS frames: the frames that follow it tell which.
        if FileSignature.matches(header, "ID3", at: 0) {
            guard header[3] < 0xFF, header[4] < 0xFF, header[6...9].allSatisfy({ $0 < 0x80 }) else { return nil }
            let size = header[6...9].reduce(Int64(0)) { $0 << 7 | Int64($1) }
            guard let frame = reader.bytes(at: 10 + size + (header[5] & 0x10 != 0 ? 10 : 0), count: 4) else { return nil }
            header = frame
        }
        guard header[0] == 0xFF else { return nil }
        // ADTS: a 12-bit sync word, MPEG layer 0.
        if header[1] & 0xF6 == 0xF0 { return .adts }
        // MPEG audio: an 11-bit sync word, a version other than the reserved 01, layer III (01),
        // a bit-rate index other than the "bad" 1111 and a sampling-rate index other than 11.
        if header[1] & 0xE0 == 0xE0, header[1] & 0x18 != 0x08, header[1] & 0x06 == 0x02,
           header[2] >> 4 != 0xF, header[2] & 0x0C != 0x0C { return .mp3 }
        return nil
    }

    /// The container AudioFileCreateWithURL writes for `fileType` with a compressed format.
    static func container(forType fileType: AudioFileTypeID) -> Container? {
        switch fileType {
        case kAudioFileCAFType: .caf
        case kAudioFileM4AType: .mpeg4(muxer: "ipod")
        case kAudioFileMPEG4Type: .mpeg4(muxer: "mp4")
        case kAudioFileAAC_ADTSType: .adts
        default: nil
        }
    }

    /// Whether `format` is one of the compressed formats this type writes.
    static func isPacketFormat(_ format: AudioStreamBasicDescription) -> Bool {
        PacketFormat(formatID: format.mFormatID) != nil
    }
}

// MARK: - Create

extension PacketAudioFile {
    /// Creates a file of `fileType` (whose container is `container(forType:)`) for packets of
    /// `format`. Throws 'fmt?' for a format the container cannot hold or an incomplete
    /// description, dupFNErr for an existing file without `eraseFile`, and the POSIX errors.
    static func create(path: String, fileType: AudioFileTypeID, in container: Container, format: AudioStreamBasicDescription,
                       eraseFile: Bool) throws -> PacketAudioFile {
        let (compressed, format) = try validated(format, for: container)
        try AudioFileObject.refuseDirectory(path)
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC | (eraseFile ? O_TRUNC : O_EXCL), 0o644)
        guard fd >= 0 else { throw SoundFileError.system(errno, path) }
        var state = State(
            fd: fd, path: path, fileType: fileType, container: container, compressed: compressed, format: format,
            index: PacketIndex(framesPerPacket: format.mFramesPerPacket), canRead: true, canWrite: true, dataOffset: 0)
        switch container {
        case .caf: state.cafWriter = CAFPacketWriter(fd: fd)
        case .adts, .mp3: break
        case .mpeg4(let muxer):
            // libavformat writes the file (the muxer seeks back to write the index); packets
            // written cannot be read back before close.
            Glibc.close(fd)
            state = State(fd: -1, path: path, fileType: fileType, container: container, compressed: compressed, format: format,
                          index: state.index, canRead: false, canWrite: true, dataOffset: 0)
            state.mediaWriter = MediaFileWriter(path: path, formatName: muxer)
        }
        // The encoder delay a file written from jaq's encoders starts with, until the caller sets
        // kAudioFilePropertyPacketTableInfo (FFmpeg's AAC encoder primes 1024 frames).
        if compressed == .aac { state.index.primingFrames = 1024 }
        return PacketAudioFile(state)
    }

    /// The data format checked for a container, with the frames and bytes per packet the
    /// format fixes filled in where the caller left them 0.
    static func validated(_ format: AudioStreamBasicDescription, for container: Container) throws(AudioToolboxError)
        -> (PacketFormat, AudioStreamBasicDescription) {
        func unsupported(_ reason: String) -> AudioToolboxError {
            AudioToolboxError(kAudioFileUnsupportedDataFormatError, reason)
        }
        guard let compressed = PacketFormat(formatID: format.mFormatID) else {
            throw unsupported("\(fourCharacterCode(format.mFormatID)) is not a compressed format jaq writes")
        }
        guard format.mSampleRate.isFinite, format.mSampleRate >= 1, format.mSampleRate <= 768_000 else {
            throw unsupported("sample rate \(format.mSampleRate) Hz")
        }
        guard (1...64).contains(format.mChannelsPerFrame) else { throw unsupported("\(format.mChannelsPerFrame) channels") }
        switch container {
        case .caf: break
        case .mpeg4:
            guard [.aac, .aacHE, .alac].contains(compressed) else { throw unsupported("MPEG-4 files hold AAC or ALAC here") }
        case .adts:
            guard [.aac, .aacHE].contains(compressed) else { throw unsupported("ADTS files hold AAC only") }
        case .mp3:
            throw unsupported("MP3 files are written from linear PCM (libsndfile encodes them), not from packets")
        }
        var result = format
        if result.mFramesPerPacket == 0 { result.mFramesPerPacket = compressed.standardFramesPerPacket }
        if compressed == .ima4 { result.mBytesPerPacket = 34 * format.mChannelsPerFrame }
        if compressed != .ima4, result.mBytesPerPacket != 0 {
            throw unsupported("\(fourCharacterCode(format.mFormatID)) packets vary in size: mBytesPerPacket must be 0")
        }
        result.mBytesPerFrame = 0
        return (compressed, result)
    }
}

// MARK: - Open

extension PacketAudioFile {
    /// Opens an existing file of packets for reading.
    /// - Throws: 'op??' for write access (these files are written only when created here);
    ///   'dta?' for a damaged file; 'fmt?' for a codec jaq has no packet reader for.
    static func open(path: String, container: Container, permissions: Int8) throws -> PacketAudioFile {
        guard permissions & AudioFilePermissions.writePermission.rawValue == 0 else {
            throw AudioToolboxError(kAudioFileOperationNotSupportedError,
                                    "compressed files are written only when created with AudioFileCreateWithURL; open them for reading")
        }
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SoundFileError.system(errno, path) }
        do {
            var status = stat()
            guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
                throw AudioToolboxError(kAudio_BadFilePathError, "\(path) is not a regular file")
            }
            let size = Int64(status.st_size)
            switch container {
            case .caf:
                let contents = try CAFPackets.read(fd: fd, fileByteCount: size)
                let compressed = PacketFormat(formatID: contents.format.mFormatID)!
                var state = State(fd: fd, path: path, fileType: kAudioFileCAFType, container: .caf, compressed: compressed,
                                  format: contents.format, index: contents.index, cookie: contents.cookie,
                                  channelLayout: contents.channelLayout, canRead: true, canWrite: false, dataOffset: contents.dataOffset)
                if compressed == .alac, let bits = contents.cookie.flatMap(PacketFormat.alacBitDepth(cookie:)) {
                    state.sourceBitDepth = bits
                }
                return PacketAudioFile(state)
            case .mpeg4, .adts, .mp3:
                return PacketAudioFile(try mediaState(fd: fd, path: path, size: size, container: container))
            }
        } catch {
            Glibc.close(fd)
            throw error
        }
    }

    /// The state of a file libavformat indexes.
    private static func mediaState(fd: Int32, path: String, size: Int64, container: Container) throws -> State {
        let media: MediaFileIndex
        do {
            media = try MediaFileReader.index(path: path, fileByteCount: size)
        } catch {
            throw AudioToolboxError(kAudioFileInvalidFileError, "damaged file: \(error)")
        }
        guard var compressed = PacketFormat(codecID: media.codecID) else {
            throw AudioToolboxError(kAudioFileUnsupportedDataFormatError,
                                    "the audio is \(String(cString: avcodec_get_name(media.codecID))), which jaq has no packet reader for")
        }
        var extradata = media.extradata
        var headerBytes = 0
        if container == .adts {
            // ADTS packets start with a 7-byte header (9 with a CRC) that MPEG-4 and CAF files
            // do not store: the packets here are what follows it, the header makes the cookie.
            guard let first = media.packets.first, let header = ChunkReader(fd: fd).bytes(at: first.position, count: 7) else {
                throw AudioToolboxError(kAudioFileInvalidFileError, "damaged ADTS file: no frames")
            }
            headerBytes = header[1] & 1 == 1 ? 7 : 9
            let objectType = (header[2] >> 6) + 1
            let rateIndex = (header[2] >> 2) & 0xF
            let channels = (header[2] & 1) << 2 | header[3] >> 6
            let config = UInt16(objectType) << 11 | UInt16(rateIndex) << 7 | UInt16(channels) << 3
            extradata = [UInt8(config >> 8), UInt8(config & 0xFF)]
        }
        if compressed == .aac, extradata.first.map({ $0 >> 3 }) == 5 {
            compressed = .aacHE
        }
        var framesPerPacket = compressed.standardFramesPerPacket
        // MPEG-2 and 2.5 layer III frames (16-24 kHz and below) are 576 frames, MPEG-1's 1152.
        if compressed == .mp3, media.frameSize > 0 { framesPerPacket = UInt32(clamping: media.frameSize) }
        var index = PacketIndex(framesPerPacket: framesPerPacket)
        index.entries.reserveCapacity(media.packets.count)
        for packet in media.packets {
            guard packet.byteCount > headerBytes else {
                throw AudioToolboxError(kAudioFileInvalidFileError, "damaged file: a packet of \(packet.byteCount) bytes")
            }
            let frames = framesPerPacket > 0 ? framesPerPacket : UInt32(clamping: packet.frameCount)
            index.append(.init(offset: packet.position + Int64(headerBytes), byteCount: UInt32(packet.byteCount - headerBytes),
                               frameCount: frames))
        }
        var remainder = media.remainderFrames
        // MPEG-4 files shorten the last packet's duration by its padding.
        if framesPerPacket > 0, let last = media.packets.last, last.frameCount > 0, last.frameCount < Int64(framesPerPacket) {
            remainder += Int64(framesPerPacket) - last.frameCount
        }
        index.primingFrames = Int32(clamping: media.primingFrames)
        index.remainderFrames = Int32(clamping: remainder)
        guard Int64(index.primingFrames) + Int64(index.remainderFrames) <= index.frameCount else {
            throw AudioToolboxError(kAudioFileInvalidFileError, "damaged file: more priming and padding than frames")
        }
        var bitDepth = media.bitsPerRawSample
        if compressed == .alac, let bits = PacketFormat.alacBitDepth(cookie: extradata) { bitDepth = bits }
        let format = compressed.streamDescription(sampleRate: Double(media.sampleRate), channels: media.channelCount,
                                                  framesPerPacket: framesPerPacket, sourceBitDepth: bitDepth)
        let header = ChunkReader(fd: fd).bytes(at: 8, count: 4) ?? []
        let fileType = container == .adts ? kAudioFileAAC_ADTSType
            : container == .mp3 ? kAudioFileMP3Type
            : header == Array("M4A ".utf8) || header == Array("M4B ".utf8) ? kAudioFileM4AType
            : header.starts(with: Array("3gp".utf8)) ? kAudioFile3GPType : kAudioFileMPEG4Type
        var state = State(fd: fd, path: path, fileType: fileType, container: container, compressed: compressed, format: format,
                          index: index, cookie: compressed.cookie(extradata: extradata), canRead: true, canWrite: false,
                          dataOffset: media.packets.first?.position ?? 0)
        state.declaredBitRate = media.bitRate
        state.sourceBitDepth = bitDepth
        return state
    }
}

// MARK: - Close

extension PacketAudioFile {
    func close() throws {
        try withOpenState { state in
            defer {
                if state.fd >= 0 { Glibc.close(state.fd) }
                state.fd = -1
                state.isOpen = false
                state.mediaWriter = nil
            }
            guard state.canWrite else { return }
            if var writer = state.cafWriter {
                try writer.finish(format: state.format, index: state.index, cookie: state.cookie, channelLayout: state.channelLayout)
                state.cafWriter = writer
            }
            if let writer = state.mediaWriter {
                if !writer.hasStarted { try Self.startMediaWriter(&state, writer) }
                do {
                    try writer.finish(remainderFrames: Int64(state.index.remainderFrames))
                } catch {
                    throw AudioToolboxError(ioErr, "\(state.path): \(error)")
                }
            }
        }
    }
}

// MARK: - Packets

extension PacketAudioFile {
    func readPackets(from startPacket: Int64, count packetCount: Int, capacity: Int, into buffer: UnsafeMutableRawPointer,
                     descriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?) throws
        -> (packets: Int, bytes: Int, reachedEnd: Bool) {
        try withOpenState { state in
            guard state.canRead else {
                throw AudioToolboxError(kAudioFilePermissionsError,
                                        "MPEG-4 files being written are read once closed")
            }
            let entries = state.index.entries
            guard startPacket >= 0, startPacket <= Int64(entries.count) else {
                throw AudioToolboxError(kAudioFileInvalidPacketOffsetError, "packet \(startPacket) is outside 0...\(entries.count)")
            }
            let start = Int(startPacket)
            let end = min(entries.count, start + max(packetCount, 0))
            var bytes = 0
            var packet = start
            while packet < end, capacity - bytes >= Int(entries[packet].byteCount) {
                let entry = entries[packet]
                guard let data = ChunkReader(fd: state.fd).bytes(at: entry.offset, count: Int(entry.byteCount)) else {
                    throw AudioToolboxError(kAudioFileInvalidFileError, "packet \(packet) could not be read: the file is shorter than its index")
                }
                data.withUnsafeBytes { (buffer + bytes).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
                descriptions?[packet - start] = AudioStreamPacketDescription(
                    mStartOffset: Int64(bytes), mVariableFramesInPacket: state.index.framesPerPacket == 0 ? entry.frameCount : 0,
                    mDataByteSize: entry.byteCount)
                bytes += Int(entry.byteCount)
                packet += 1
            }
            if packet == start, start < end {
                throw AudioToolboxError(kAudio_ParamError,
                                        "packet \(start) is \(entries[start].byteCount) bytes, the buffer \(capacity) (kAudioFilePropertyMaximumPacketSize)")
            }
            let read = packet - start
            return (read, bytes, read < packetCount && packet == entries.count)
        }
    }

    func writePackets(at startPacket: Int64, count packetCount: Int, byteCount: Int,
                      descriptions: UnsafePointer<AudioStreamPacketDescription>?, from bytes: UnsafeRawPointer) throws
        -> (packets: Int, error: Error?) {
        try withOpenState { state in
            guard state.canWrite else { throw AudioToolboxError(kAudioFilePermissionsError, "the file is not open for writing") }
            // No packets: nothing is written, as on Apple platforms, whatever the byte count and
            // descriptions (0 and NULL from a stopping recording queue's unfilled buffers, which
            // the guide's callback writes like every other).
            if packetCount == 0 {
                guard (0...Int64(state.index.entries.count)).contains(startPacket) else {
                    throw AudioToolboxError(kAudioFileInvalidPacketOffsetError,
                                            "packet \(startPacket) is past the end (\(state.index.entries.count) packets)")
                }
                return (0, nil)
            }
            guard startPacket == Int64(state.index.entries.count) else {
                throw AudioToolboxError(kAudioFileInvalidPacketOffsetError,
                                        "compressed packets are appended: the next packet is \(state.index.entries.count), not \(startPacket)")
            }
            guard packetCount >= 0 else { throw AudioToolboxError(kAudio_ParamError, "a negative packet count") }
            let packets = try Self.packets(in: byteCount, count: packetCount, descriptions: descriptions, format: state.format)
            for (number, packet) in packets.enumerated() {
                do {
                    try Self.append(&state, UnsafeRawBufferPointer(start: bytes + packet.offset, count: packet.size), frames: packet.frames)
                } catch {
                    return (number, error)
                }
            }
            return (packets.count, nil)
        }
    }

    /// The packets a write describes, checked against the bytes given.
    private static func packets(in byteCount: Int, count: Int, descriptions: UnsafePointer<AudioStreamPacketDescription>?,
                                format: AudioStreamBasicDescription) throws(AudioToolboxError) -> [(offset: Int, size: Int, frames: UInt32)] {
        if format.mBytesPerPacket > 0 {
            let size = Int(format.mBytesPerPacket)
            guard byteCount >= count * size else {
                throw AudioToolboxError(kAudio_ParamError, "\(count) packets are \(count * size) bytes, inNumBytes is \(byteCount)")
            }
            return (0..<count).map { ($0 * size, size, format.mFramesPerPacket) }
        }
        guard let descriptions else {
            throw AudioToolboxError(kAudio_ParamError, "packets of variable size need their AudioStreamPacketDescriptions")
        }
        return try (0..<count).map { number throws(AudioToolboxError) in
            let description = descriptions[number]
            let frames = format.mFramesPerPacket > 0 ? format.mFramesPerPacket : description.mVariableFramesInPacket
            guard description.mStartOffset >= 0, description.mDataByteSize > 0,
                  description.mStartOffset + Int64(description.mDataByteSize) <= Int64(byteCount)
            else {
                throw AudioToolboxError(kAudio_ParamError,
                                        "packet \(number) (\(description.mDataByteSize) bytes at \(description.mStartOffset)) is outside the \(byteCount) bytes given")
            }
            guard frames > 0 else {
                throw AudioToolboxError(kAudio_ParamError, "packet \(number) says no frames (mVariableFramesInPacket is 0)")
            }
            return (Int(description.mStartOffset), Int(description.mDataByteSize), frames)
        }
    }

    /// Appends one packet to the file.
    private static func append(_ state: inout State, _ packet: UnsafeRawBufferPointer, frames: UInt32) throws {
        var offset: Int64 = 0
        switch state.container {
        case .caf:
            guard var writer = state.cafWriter else { return }
            if !writer.hasHeader {
                try writer.writeHeader(format: state.format, cookie: state.cookie, channelLayout: state.channelLayout)
                state.dataOffset = writer.dataEnd
            }
            offset = try writer.append(packet)
            state.cafWriter = writer
        case .adts:
            let header = try adtsHeader(state, packetSize: packet.count)
            var frame = header + Array(packet)
            let start = Int64(lseek(state.fd, 0, SEEK_END))
            try frame.withUnsafeMutableBytes { try ChunkReader.writeAll(state.fd, UnsafeRawBufferPointer($0), at: start) }
            offset = start + Int64(header.count)
        case .mp3:
            throw AudioToolboxError(kAudioFilePermissionsError, "MP3 files of packets are read only")
        case .mpeg4:
            guard let writer = state.mediaWriter else { return }
            if !writer.hasStarted { try startMediaWriter(&state, writer) }
            do {
                try writer.write(packet, frames: Int64(frames))
            } catch {
                throw AudioToolboxError(ioErr, "\(state.path): \(error)")
            }
        }
        state.index.append(.init(offset: offset, byteCount: UInt32(packet.count), frameCount: frames))
    }

    /// Starts libavformat's muxer with the cookie (or one made from the data format).
    private static func startMediaWriter(_ state: inout State, _ writer: MediaFileWriter) throws {
        var extradata = state.cookie.flatMap { state.compressed.extradata(cookie: $0) }
        if extradata == nil, state.compressed == .aac {
            extradata = PacketFormat.audioSpecificConfig(sampleRate: state.format.mSampleRate, channels: Int(state.format.mChannelsPerFrame))
        }
        guard let extradata else {
            throw AudioToolboxError(kAudioFileUnsupportedDataFormatError,
                                    "set kAudioFilePropertyMagicCookieData (the encoder's cookie) before writing \(state.compressed) packets to an MPEG-4 file")
        }
        let codec = CodecFormat(formatID: state.format.mFormatID, formatFlags: state.format.mFormatFlags, sampleRate: state.format.mSampleRate,
                                channelCount: Int(state.format.mChannelsPerFrame), framesPerPacket: Int(state.format.mFramesPerPacket))
        let stream = MediaFileWriter.Stream(format: codec, extradata: extradata,
                                            bitsPerRawSample: state.compressed == .alac ? PacketFormat.alacBitDepth(cookie: extradata) ?? 16 : 0)
        do {
            try writer.start(stream, primingFrames: Int64(state.index.primingFrames))
        } catch {
            throw AudioToolboxError(kAudioFileUnsupportedDataFormatError, "libavformat cannot write this stream: \(error)")
        }
    }

    /// The 7-byte ADTS header of a packet (no CRC).
    private static func adtsHeader(_ state: State, packetSize: Int) throws(AudioToolboxError) -> [UInt8] {
        let config = state.cookie.flatMap { state.compressed.extradata(cookie: $0) }
            ?? PacketFormat.audioSpecificConfig(sampleRate: state.format.mSampleRate, channels: Int(state.format.mChannelsPerFrame))
        guard let config, config.count >= 2 else {
            throw AudioToolboxError(kAudioFileUnsupportedDataFormatError, "ADTS cannot describe AAC at \(state.format.mSampleRate) Hz")
        }
        let objectType = min(max(Int(config[0] >> 3), 1), 4)
        let rateIndex = Int(config[0] & 7) << 1 | Int(config[1] >> 7)
        let channels = Int(config[1] >> 3) & 0xF
        let length = packetSize + 7
        guard length < 1 << 13 else { throw AudioToolboxError(kAudio_ParamError, "an AAC packet of \(packetSize) bytes") }
        return [0xFF, 0xF1, UInt8((objectType - 1) << 6 | rateIndex << 2 | channels >> 2),
                UInt8((channels & 3) << 6 | length >> 11), UInt8((length >> 3) & 0xFF), UInt8((length & 7) << 5 | 0x1F), 0xFC]
    }

    // MARK: Bytes

    func readBytes(from start: Int64, count: Int, into buffer: UnsafeMutableRawPointer) throws -> (bytes: Int, reachedEnd: Bool) {
        try withOpenState { state in
            guard state.container == .caf, state.canRead else {
                throw AudioToolboxError(kAudioFileOperationNotSupportedError, "this file's packets are not contiguous: read packets")
            }
            let total = state.index.byteCount
            guard start >= 0, start <= total else { throw AudioToolboxError(kAudioFilePositionError, "byte \(start) is outside 0...\(total)") }
            let wanted = Int(min(Int64(max(count, 0)), total - start))
            guard let data = ChunkReader(fd: state.fd).bytes(at: state.dataOffset + start, count: wanted) else {
                throw AudioToolboxError(kAudioFileInvalidFileError, "the file is shorter than its data")
            }
            data.withUnsafeBytes { if $0.count > 0 { buffer.copyMemory(from: $0.baseAddress!, byteCount: $0.count) } }
            return (wanted, wanted < count)
        }
    }

    func writeBytes(at start: Int64, from bytes: UnsafeRawBufferPointer) throws -> (bytes: Int, error: Error?) {
        try withOpenState { _ in
            throw AudioToolboxError(kAudioFileOperationNotSupportedError,
                                    "compressed data is written in packets: AudioFileWritePackets with their descriptions")
        }
    }
}
