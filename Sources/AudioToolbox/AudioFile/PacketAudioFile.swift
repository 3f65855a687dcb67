import AudioCodec
import CAudioToolbox
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
        guard let codec = media.codec else {
            throw AudioToolboxError(kAudioFileUnsupportedDataFormatError,
                                    "the audio is \(media.codecName), which jaq has no packet reader for")
        }
        var compressed = PacketFormat(codec: codec)
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
