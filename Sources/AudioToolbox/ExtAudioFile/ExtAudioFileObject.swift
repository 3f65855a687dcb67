import CAudioToolbox
import AudioCodec
import Glibc
import QueueCore

// Extended Audio File Services: an audio file read or written in a linear PCM client format,
// through an AudioConverter between the client's frames and the file's packets. Built on the
// C API of AudioFile and AudioConverter only, so what the converter learns (sample rates,
// channel counts) ExtAudioFile can do without change.

/// The object behind an ExtAudioFileRef.
///
/// Thread safety: like Apple's, one thread at a time; after ExtAudioFileWriteAsync's priming
/// call its writer thread converts and writes the ring's frames (AsyncWriter), and every other
/// call on a file being written lets it finish first.
final class ExtAudioFileObject: @unchecked Sendable {
    enum Mode { case reading, writing }

    let mode: Mode
    /// The file; nil while a compressed file waits for its sample rate (created with rate 0).
    private(set) var file: AudioFileID?
    /// Whether Dispose closes the file (not for ExtAudioFileWrapAudioFileID).
    let ownsFile: Bool
    private(set) var fileFormat: AudioStreamBasicDescription
    /// The client format set, or the file's for linear PCM files; nil until set for compressed files.
    private(set) var clientFormat: AudioStreamBasicDescription?
    private(set) var converter: AudioConverterRef?
    var clientLayout: [UInt8]?
    var codecManufacturer: UInt32 = 0x6170706C  // 'appl': kAppleSoftwareAudioCodecManufacturer
    /// Bytes of file data moved per converter call.
    var ioBufferBytes = 32768
    let pendingCreate: PendingCreate?

    /// What ExtAudioFileCreateWithURL deferred until the client format gives the sample rate.
    struct PendingCreate {
        let path: String
        let fileType: AudioFileTypeID
        let flags: UInt32
        let layout: [UInt8]?
    }

    // Reading and writing state (ExtAudioFileObject+Read, +Write).
    var packetTable = PacketTable()
    var fileMaxPacketSize = 0
    var filePacketCount: Int64 = 0
    /// Where reading was last placed (Seek), in file frames after the priming; the client
    /// frames read since are `readState.clientFramesRead`.
    var position: Int64 = 0
    var readState = ReadState()
    var writeState = WriteState()
    /// ExtAudioFileWriteAsync's ring and writer thread, from its priming call until Dispose.
    var asyncWriter: AsyncWriter?
    let io = ByteBuffer()
    let scratch = ByteBuffer()
    var descriptions: UnsafeMutablePointer<AudioStreamPacketDescription>
    var descriptionCapacity = 512

    var ref: ExtAudioFileRef { OpaquePointer(Unmanaged.passUnretained(self).toOpaque()) }

    private init(mode: Mode, file: AudioFileID?, ownsFile: Bool, fileFormat: AudioStreamBasicDescription, pendingCreate: PendingCreate?) {
        self.mode = mode
        self.file = file
        self.ownsFile = ownsFile
        self.fileFormat = fileFormat
        self.pendingCreate = pendingCreate
        descriptions = .allocate(capacity: descriptionCapacity)
        if fileFormat.mFormatID == kAudioFormatLinearPCM { clientFormat = fileFormat }
    }

    deinit {
        if let converter { _ = audioConverterDispose(converter) }
        descriptions.deallocate()
    }

    // MARK: Opening

    /// Wraps an open file: for reading (its format, length and packet table are read now) or,
    /// `forWriting`, a new file.
    static func wrap(_ file: AudioFileID, forWriting: Bool, ownsFile: Bool) throws -> ExtAudioFileObject {
        var format = AudioStreamBasicDescription()
        try check(getFileProperty(file, kAudioFilePropertyDataFormat, &format), "the file's data format")
        let object = ExtAudioFileObject(mode: forWriting ? .writing : .reading, file: file, ownsFile: ownsFile,
                                        fileFormat: format, pendingCreate: nil)
        try object.readFileFacts()
        return object
    }

    /// ExtAudioFileCreateWithURL: a compressed description is completed (frames per packet);
    /// one without a sample rate waits for the client format's.
    static func create(path: String, fileType: AudioFileTypeID, format: AudioStreamBasicDescription,
                       layout: [UInt8]?, flags: UInt32) throws -> ExtAudioFileObject {
        var format = format
        let compressed = format.mFormatID != kAudioFormatLinearPCM
        if compressed {
            guard CompressedFormat.encodable.contains(format.mFormatID) else {
                throw AudioToolboxError(kExtAudioFileError_InvalidDataFormat, "jaq encodes no \(fourCharacterCode(format.mFormatID))")
            }
            if format.mFramesPerPacket == 0 {
                format.mFramesPerPacket = UInt32(CompressedFormat.defaultFramesPerPacket(format.mFormatID, sampleRate: format.mSampleRate))
            }
            format.mBytesPerFrame = 0
            format.mBitsPerChannel = 0
        }
        guard format.mChannelsPerFrame > 0 else {
            throw AudioToolboxError(kExtAudioFileError_InvalidDataFormat, "\(format.mChannelsPerFrame) channels")
        }
        if compressed, format.mSampleRate == 0 {
            if flags & AudioFileFlags.eraseFile.rawValue == 0, access(path, F_OK) == 0 {
                throw AudioToolboxError(OSStatus(dupFNErr), "\(path) exists (kAudioFileFlags_EraseFile replaces it)")
            }
            return ExtAudioFileObject(mode: .writing, file: nil, ownsFile: true, fileFormat: format,
                                      pendingCreate: PendingCreate(path: path, fileType: fileType, flags: flags, layout: layout))
        }
        let file = try createAudioFile(path: path, fileType: fileType, format: format, flags: flags)
        do {
            if let layout { try setLayout(layout, on: file) }
            return try wrap(file, forWriting: true, ownsFile: true)
        } catch {
            _ = audioFileClose(file)
            throw error
        }
    }

    private static func setLayout(_ layout: [UInt8], on file: AudioFileID) throws {
        let status = layout.withUnsafeBytes { audioFileSetProperty(file, kAudioFilePropertyChannelLayout, UInt32($0.count), $0.baseAddress) }
        try check(status, "the channel layout")
    }

    /// Creates the file ExtAudioFileCreateWithURL deferred, at the client format's sample rate.
    private func createPendingFile(sampleRate: Double) throws {
        guard file == nil, let pendingCreate else { return }
        fileFormat.mSampleRate = sampleRate
        let created = try createAudioFile(path: pendingCreate.path, fileType: pendingCreate.fileType, format: fileFormat,
                                          flags: pendingCreate.flags | AudioFileFlags.eraseFile.rawValue)
        file = created
        if let layout = pendingCreate.layout { try Self.setLayout(layout, on: created) }
        try check(Self.getFileProperty(created, kAudioFilePropertyDataFormat, &fileFormat), "the file's data format")
        try readFileFacts()
    }

    /// The file's packet count, largest packet and packet table (priming and remainder).
    private func readFileFacts() throws {
        guard let file else { return }
        var count: UInt64 = 0
        if Self.getFileProperty(file, kAudioFilePropertyAudioDataPacketCount, &count) == noErr { filePacketCount = Int64(count) }
        var bound: UInt32 = 0
        if Self.getFileProperty(file, kAudioFilePropertyPacketSizeUpperBound, &bound) != noErr || bound == 0 {
            _ = Self.getFileProperty(file, kAudioFilePropertyMaximumPacketSize, &bound)
        }
        fileMaxPacketSize = Int(bound)
        var info = AudioFilePacketTableInfo()
        let framesPerPacket = Int64(max(fileFormat.mFramesPerPacket, 1))
        if !isPCMFile, Self.getFileProperty(file, kAudioFilePropertyPacketTableInfo, &info) == noErr {
            packetTable = PacketTable(file: info, totalFrames: filePacketCount * framesPerPacket)
        } else {
            packetTable = PacketTable(file: AudioFilePacketTableInfo(mNumberValidFrames: filePacketCount * framesPerPacket,
                                                                     mPrimingFrames: 0, mRemainderFrames: 0),
                                      totalFrames: filePacketCount * framesPerPacket)
        }
    }

    static func getFileProperty<T: BitwiseCopyable>(_ file: AudioFileID, _ id: AudioFilePropertyID, _ value: inout T) -> OSStatus {
        var size = UInt32(MemoryLayout<T>.size)
        return withUnsafeMutableBytes(of: &value) { audioFileGetProperty(file, id, &size, $0.baseAddress) }
    }

    var isPCMFile: Bool { fileFormat.mFormatID == kAudioFormatLinearPCM }

    /// Client frames per file frame (1 unless the converter changes the sample rate).
    var clientRatio: Double {
        guard let clientFormat, fileFormat.mSampleRate > 0 else { return 1 }
        return clientFormat.mSampleRate / fileFormat.mSampleRate
    }

    /// `frames` file frames in client frames, or back (`toClient` false).
    func scaled(_ frames: Int64, toClient: Bool) -> Int64 {
        let ratio = clientRatio
        return ratio == 1 ? frames : Int64((Double(frames) * (toClient ? ratio : 1 / ratio)).rounded())
    }

    /// Tell: in file frames after the priming, as Apple's header says.
    var currentFrame: Int64 {
        mode == .reading ? position + scaled(readState.clientFramesRead, toClient: false) : validFileFrames
    }

    // MARK: Client format and converter

    /// The client format with its channels interleaved: what the converter sees.
    var converterClientFormat: AudioStreamBasicDescription? {
        guard var format = clientFormat else { return nil }
        if format.isNonInterleaved {
            // In range: setClientFormat checked the sizes (a file's own format is not non-interleaved).
            let (frameBytes, overflow) = format.mBytesPerFrame.multipliedReportingOverflow(by: format.mChannelsPerFrame)
            guard !overflow else { return nil }
            format.mBytesPerFrame = frameBytes
            format.mBytesPerPacket = frameBytes
        }
        format.mFormatFlags &= ~kAudioFormatFlagIsNonInterleaved  // (mono: the same bytes either way)
        return format
    }

    /// The most channels and bytes per sample a client format may have (so frame sizes stay small).
    static let maximumClientChannels: UInt32 = 64
    static let maximumSampleBytes: UInt32 = 8

    /// kExtAudioFileError_InvalidDataFormat unless the client's channels (1…64) and bytes per
    /// sample (1…8) are in range and the interleaved frame's size is whole.
    static func checkClientSizes(_ format: AudioStreamBasicDescription) throws {
        let channels = format.mChannelsPerFrame
        guard (1...maximumClientChannels).contains(channels) else {
            throw AudioToolboxError(kExtAudioFileError_InvalidDataFormat, "\(channels) channels (1...\(maximumClientChannels))")
        }
        let perChannel = format.isNonInterleaved ? format.mBytesPerFrame : format.mBytesPerFrame / channels
        guard (1...maximumSampleBytes).contains(perChannel), format.isNonInterleaved || format.mBytesPerFrame % channels == 0 else {
            throw AudioToolboxError(kExtAudioFileError_InvalidDataFormat,
                                    "\(format.mBytesPerFrame) bytes per frame for \(channels) channels (1...\(maximumSampleBytes) bytes a sample)")
        }
        guard format.mBitsPerChannel <= perChannel * 8 else {
            throw AudioToolboxError(kExtAudioFileError_InvalidDataFormat, "\(format.mBitsPerChannel) bits in \(perChannel) bytes")
        }
    }

    /// ClientDataFormat: linear PCM only; the converter is made now, so a format it cannot
    /// convert to is refused here with its result.
    func setClientFormat(_ format: AudioStreamBasicDescription) throws {
        guard format.mFormatID == kAudioFormatLinearPCM else {
            throw AudioToolboxError(kExtAudioFileError_NonPCMClientFormat, "the client format is \(fourCharacterCode(format.mFormatID)), not linear PCM")
        }
        guard format.mChannelsPerFrame > 0, format.mBytesPerFrame > 0, format.mFramesPerPacket == 1,
              format.mBytesPerPacket == format.mBytesPerFrame, format.mSampleRate > 0, format.mSampleRate.isFinite else {
            throw AudioToolboxError(kExtAudioFileError_InvalidDataFormat, "an incomplete linear PCM description")
        }
        try Self.checkClientSizes(format)
        if mode == .writing, writeState.packetsWritten > 0 || writeState.framesTaken > 0 {
            throw AudioToolboxError(kExtAudioFileError_InvalidOperationOrder, "the client format is set before writing")
        }
        if file == nil { try createPendingFile(sampleRate: format.mSampleRate) }
        position = currentFrame
        readState.clientFramesRead = 0
        let previous = clientFormat
        clientFormat = format
        do {
            try makeConverter()
        } catch {
            clientFormat = previous
            try? makeConverter()
            throw error
        }
        if let layout = clientLayout, (try? layout.withUnsafeBytes { try ChannelLayoutValue(bytes: $0) })?.channelCount != Int(format.mChannelsPerFrame) {
            clientLayout = nil
        }
        readState.needsReposition = true
    }

    /// A new converter between the client format and the file's.
    func makeConverter() throws {
        if let converter { _ = audioConverterDispose(converter) }
        converter = nil
        guard let client = converterClientFormat else { return }
        var result: AudioConverterRef?
        var source = mode == .reading ? fileFormat : client
        var destination = mode == .reading ? client : fileFormat
        let status = audioConverterNew(&source, &destination, &result)
        try check(status, "no converter from \(source.mFormatID == kAudioFormatLinearPCM ? "linear PCM" : fourCharacterCode(source.mFormatID)) to the \(mode == .reading ? "client" : "file") format")
        converter = result
        if mode == .reading, !isPCMFile, let file { try copyCookie(from: file, to: result) }
        try applyChannelLayouts()
    }

    /// A client channel layout that orders the file's channels differently reorders them
    /// through the converter's channel map (ExtAudioFileChannelMap); others leave its routing.
    func applyChannelLayouts() throws {
        guard let converter, let clientLayout,
              let client = try? clientLayout.withUnsafeBytes({ bytes throws(AudioToolboxError) in try ChannelLayoutValue(bytes: bytes) }),
              let fileBytes = try? fileLayout(),
              let file = try? fileBytes.withUnsafeBytes({ bytes throws(AudioToolboxError) in try ChannelLayoutValue(bytes: bytes) }) else { return }
        let (input, output) = mode == .reading ? (file, client) : (client, file)
        guard var map = ExtAudioFileChannelMap.map(from: input, to: output) else { return }
        try check(audioConverterSetProperty(converter, kAudioConverterChannelMap, UInt32(map.count * 4), &map), "the channel layout's map")
    }

    private func copyCookie(from file: AudioFileID, to converter: AudioConverterRef?) throws {
        var size: UInt32 = 0
        var writable: UInt32 = 0
        guard audioFileGetPropertyInfo(file, kAudioFilePropertyMagicCookieData, &size, &writable) == noErr, size > 0 else { return }
        var cookie = [UInt8](repeating: 0, count: Int(size))
        try check(cookie.withUnsafeMutableBytes { audioFileGetProperty(file, kAudioFilePropertyMagicCookieData, &size, $0.baseAddress) }, "the magic cookie")
        try check(cookie.withUnsafeBytes { audioConverterSetProperty(converter, kAudioConverterDecompressionMagicCookie, size, $0.baseAddress) },
                  "the decoder's magic cookie")
    }

    /// The object's converter, made now for a linear PCM file whose client format was never set.
    func readyConverter() throws -> AudioConverterRef {
        if converter == nil, clientFormat != nil { try makeConverter() }
        guard let converter else {
            throw AudioToolboxError(kExtAudioFileError_InvalidOperationOrder,
                                    "set kExtAudioFileProperty_ClientDataFormat (linear PCM) before reading or writing \(fourCharacterCode(fileFormat.mFormatID))")
        }
        return converter
    }

    // MARK: Closing

    /// Dispose: writes what the encoder holds and the packet table, closes an owned file.
    func dispose() throws {
        var firstError: Error?
        if mode == .writing {
            do { try finishWriting() } catch { firstError = error }
        }
        if let converter { _ = audioConverterDispose(converter) }
        converter = nil
        if ownsFile, let file {
            let status = audioFileClose(file)
            if status != noErr, firstError == nil { firstError = AudioToolboxError(status, "closing the file") }
        }
        file = nil
        if let firstError { throw firstError }
    }
}

/// Throws `status` (with what was being done) unless it is noErr.
func check(_ status: OSStatus, _ what: @autoclosure () -> String) throws {
    guard status == noErr else { throw AudioToolboxError(status, what()) }
}

extension AudioStreamBasicDescription {
    var isNonInterleaved: Bool {
        mFormatID == kAudioFormatLinearPCM && mFormatFlags & kAudioFormatFlagIsNonInterleaved != 0 && mChannelsPerFrame > 1
    }
}

/// A growable byte buffer (the file I/O and (de)interleaving buffers).
final class ByteBuffer {
    private(set) var pointer: UnsafeMutableRawPointer
    private(set) var capacity: Int

    init(capacity: Int = 4096) {
        self.capacity = capacity
        pointer = .allocate(byteCount: capacity, alignment: 16)
    }

    deinit { pointer.deallocate() }

    /// Makes room for `bytes` (the contents are not kept).
    func reserve(_ bytes: Int) {
        guard bytes > capacity else { return }
        pointer.deallocate()
        capacity = bytes
        pointer = .allocate(byteCount: bytes, alignment: 16)
    }
}
