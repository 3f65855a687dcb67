import CAudioToolbox
import QueueCore
import SoundFile

// Audio file properties: what AudioFileGetPropertyInfo, AudioFileGetProperty and
// AudioFileSetProperty see. Docs/audiofile.md lists them with their types.

extension AudioFileObject {
    /// The size of a property's value and whether it can be set now.
    func propertyInfo(_ id: AudioFilePropertyID) throws -> (size: Int, isWritable: Bool) {
        try withState { state in
            _ = try state.openSound()
            let size = try Self.value(of: id, &state, input: UnsafeRawBufferPointer(start: nil, count: 0)).count
            return (size, Self.isWritable(id, state))
        }
    }

    /// Copies a property's value into `buffer`, which holds `capacity` bytes (and, for the
    /// translation properties, the value to translate).
    /// - Returns: the value's size.
    /// - Throws: '!siz' when `capacity` is smaller than the value; 'pty?' for a property this
    ///   file does not have.
    func getProperty(_ id: AudioFilePropertyID, into buffer: UnsafeMutableRawPointer, capacity: Int) throws -> Int {
        try withState { state in
            _ = try state.openSound()
            let value = try Self.value(of: id, &state, input: UnsafeRawBufferPointer(start: buffer, count: capacity))
            guard capacity >= value.count else {
                throw AudioToolboxError(kAudioFileBadPropertySizeError,
                                        "\(fourCharacterCode(id)) needs \(value.count) bytes, not \(capacity)")
            }
            value.withUnsafeBytes { buffer.copyMemory(from: $0.baseAddress!, byteCount: value.count) }
            return value.count
        }
    }

    /// Sets a property from `bytes`.
    func setProperty(_ id: AudioFilePropertyID, from bytes: UnsafeRawBufferPointer) throws {
        try withState { state in
            let sound = try state.openSound()
            guard Self.settable.contains(id) else {
                if (try? Self.value(of: id, &state, input: UnsafeRawBufferPointer(start: nil, count: 0))) != nil {
                    throw AudioToolboxError(kAudioFileOperationNotSupportedError, "\(fourCharacterCode(id)) is read-only")
                }
                throw AudioToolboxError(kAudioFileUnsupportedPropertyError, "unsupported property \(fourCharacterCode(id))")
            }
            guard state.canWrite else {
                throw AudioToolboxError(kAudioFilePermissionsError, "the file is not open for writing")
            }
            switch id {
            case kAudioFilePropertyDataFormat:
                let format: AudioStreamBasicDescription = try Self.load(bytes)
                try Self.changeDataFormat(&state, to: format)
            case kAudioFilePropertyChannelLayout:
                try Self.changeChannelLayout(&state, to: ChannelLayoutValue(bytes: bytes))
            case kAudioFilePropertyMagicCookieData:
                state.magicCookie = bytes.isEmpty ? nil : Array(bytes)
            default: // kAudioFilePropertyDeferSizeUpdates
                let value: UInt32 = try Self.load(bytes)
                state.defersSizeUpdates = value != 0
                // Encoded streams are finished at close whatever the setting.
                if state.container?.updatesHeaderWhileWriting ?? (state.transfer == .raw) {
                    sound.setUpdatesHeaderAutomatically(!state.defersSizeUpdates)
                    if !state.defersSizeUpdates { sound.updateHeaderNow() }
                }
            }
        }
    }

    private static let settable: Set<AudioFilePropertyID> = [
        kAudioFilePropertyDataFormat, kAudioFilePropertyChannelLayout, kAudioFilePropertyMagicCookieData,
        kAudioFilePropertyDeferSizeUpdates,
    ]

    private static func isWritable(_ id: AudioFilePropertyID, _ state: State) -> Bool {
        guard state.canWrite, settable.contains(id) else { return false }
        return id != kAudioFilePropertyDataFormat || (!state.hasAudio && state.container != nil)
    }

    /// The value of a property as bytes; `input` is the caller's buffer (translations read it).
    private static func value(of id: AudioFilePropertyID, _ state: inout State,
                              input: UnsafeRawBufferPointer) throws -> [UInt8] {
        let bpf = Int64(state.bytesPerFrame)
        switch id {
        case kAudioFilePropertyFileFormat: return bytes(of: state.fileType)
        case kAudioFilePropertyDataFormat: return bytes(of: state.layout.streamDescription)
        case kAudioFilePropertyAudioDataPacketCount: return bytes(of: UInt64(state.frameCount))
        case kAudioFilePropertyAudioDataByteCount: return bytes(of: UInt64(state.byteCount))
        case kAudioFilePropertyMaximumPacketSize, kAudioFilePropertyPacketSizeUpperBound: return bytes(of: UInt32(bpf))
        case kAudioFilePropertyEstimatedDuration: return bytes(of: Float64(state.frameCount) / state.layout.sampleRate)
        case kAudioFilePropertyIsOptimized: return bytes(of: UInt32(1))
        case kAudioFilePropertyDeferSizeUpdates: return bytes(of: UInt32(state.defersSizeUpdates ? 1 : 0))
        case kAudioFilePropertyBitRate: return bytes(of: bitRate(state))
        case kAudioFilePropertyDataOffset: return bytes(of: try dataOffset(&state))
        case kAudioFilePropertySourceBitDepth: return bytes(of: try sourceBitDepth(state))
        case kAudioFilePropertyJaqContainerName where state.fileType == 0:
            return Array(try state.openSound().info.format.majorName.utf8) + [0]
        case kAudioFilePropertyChannelLayout:
            let layout = try state.channelLayout ?? state.openSound().channelMap.map(ChannelLayoutValue.init(channelMap:))
                ?? .default(channelCount: state.layout.channelCount)
            var value = [UInt8](repeating: 0, count: layout.byteCount)
            value.withUnsafeMutableBytes { layout.store(into: $0.baseAddress!) }
            return value
        case kAudioFilePropertyMagicCookieData:
            guard let cookie = state.magicCookie else {
                throw AudioToolboxError(kAudioFileUnsupportedPropertyError, "linear PCM files have no magic cookie")
            }
            return cookie
        case kAudioFilePropertyPacketToFrame, kAudioFilePropertyFrameToPacket:
            var translation = input.count >= MemoryLayout<AudioFramePacketTranslation>.size
                ? input.loadUnaligned(as: AudioFramePacketTranslation.self) : AudioFramePacketTranslation()
            // One frame per packet: frames and packets are the same numbers.
            if id == kAudioFilePropertyPacketToFrame { translation.mFrame = translation.mPacket } else { translation.mPacket = translation.mFrame }
            translation.mFrameOffsetInPacket = 0
            return bytes(of: translation)
        case kAudioFilePropertyPacketToByte, kAudioFilePropertyByteToPacket:
            var translation = input.count >= MemoryLayout<AudioBytePacketTranslation>.size
                ? input.loadUnaligned(as: AudioBytePacketTranslation.self) : AudioBytePacketTranslation()
            if id == kAudioFilePropertyPacketToByte {
                let (byte, overflow) = translation.mPacket.multipliedReportingOverflow(by: bpf)
                guard translation.mPacket >= 0, !overflow else {
                    throw AudioToolboxError(kAudioFileInvalidPacketOffsetError, "packet \(translation.mPacket) has no byte offset")
                }
                translation.mByte = byte
                translation.mByteOffsetInPacket = 0
            } else {
                guard translation.mByte >= 0 else {
                    throw AudioToolboxError(kAudioFilePositionError, "byte \(translation.mByte) is before the audio data")
                }
                let (packet, offset) = translation.mByte.quotientAndRemainder(dividingBy: bpf)
                translation.mPacket = packet
                translation.mByteOffsetInPacket = UInt32(truncatingIfNeeded: offset)
            }
            translation.mFlags = []
            return bytes(of: translation)
        default:
            throw AudioToolboxError(kAudioFileUnsupportedPropertyError, "unsupported property \(fourCharacterCode(id))")
        }
    }

    /// Bits per second: exact for stored PCM, the file's average for encoded files, 0 for an
    /// encoded file without frames (libsndfile's `sf_current_byterate` divides by zero on those).
    private static func bitRate(_ state: State) -> UInt32 {
        let rate = state.layout.sampleRate
        guard state.transfer != .raw, let sound = state.sound else {
            return clampedUInt32(rate * Double(state.bytesPerFrame * 8))
        }
        guard state.frameCount > 0 else { return 0 }
        return clampedUInt32(Double(sound.fileByteCount) * 8 * rate / Double(state.frameCount))
    }

    /// `value` rounded down into 0...UInt32.max; NaN is 0.
    private static func clampedUInt32(_ value: Double) -> UInt32 {
        value >= Double(UInt32.max) ? .max : value >= 0 ? UInt32(value) : 0
    }

    /// Where the audio data starts: the header's size (stored PCM only).
    private static func dataOffset(_ state: inout State) throws -> Int64 {
        let sound = try state.openSound()
        guard state.transfer == .raw else {
            throw AudioToolboxError(kAudioFileUnsupportedPropertyError, "encoded files have no offset of their decoded data")
        }
        if sound.mode == .write {
            // Written in order and not seekable for reading here: the header precedes the data.
            return sound.fileByteCount - state.frameCount * Int64(state.bytesPerFrame)
        }
        state.readPosition = nil
        state.writePosition = nil
        return try sound.audioDataOffset()
    }

    /// Bit depth of the source samples, negative for float (Apple's convention).
    private static func sourceBitDepth(_ state: State) throws -> Int32 {
        let lossless: Set<SoundFile.Subtype> = [.pcmS8, .pcmU8, .pcm16, .pcm24, .pcm32, .float, .double, .alac16, .alac20, .alac24, .alac32]
        guard lossless.contains(state.soundFormat.subtype) else {
            throw AudioToolboxError(kAudioFileUnsupportedPropertyError, "the source bit depth of \(state.soundFormat.subtypeName) is unknown")
        }
        switch state.soundFormat.subtype {
        case .float: return -32
        case .double: return -64
        case .alac20: return 20
        default: return Int32(state.layout.encoding.bytesPerSample * 8)
        }
    }

    // MARK: Setting

    private static func changeDataFormat(_ state: inout State, to format: AudioStreamBasicDescription) throws {
        guard let container = state.container else {
            throw AudioToolboxError(kAudioFileOperationNotSupportedError, "this file's data format cannot be changed")
        }
        guard !state.hasAudio else {
            throw AudioToolboxError(kAudioFileOperationNotSupportedError, "the data format cannot change once audio is written")
        }
        let layout = try PCMLayout(validating: format)
        var storage = try container.storage(for: layout)
        if state.soundFormat.major == .wavex, storage.format.major == .wav { storage.format.major = .wavex }
        try recreate(&state, layout: layout, format: storage.format, transfer: storage.transfer)
        if let channelLayout = state.channelLayout {
            state.channelLayout = nil
            if channelLayout.channelCount == layout.channelCount { try changeChannelLayout(&state, to: channelLayout) }
        }
    }

    /// Keeps the layout for this AudioFileID and, before any audio is written, stores it in
    /// the file where the container has a place for it (WAVE as WAVEX, AIFF, CAF, RF64).
    private static func changeChannelLayout(_ state: inout State, to layout: ChannelLayoutValue) throws {
        guard layout.channelCount == state.layout.channelCount else {
            throw AudioToolboxError(kAudio_ParamError,
                                    "the layout has \(layout.channelCount) channels, the file \(state.layout.channelCount)")
        }
        state.channelLayout = layout
        guard !state.hasAudio, let map = layout.channelMap else { return }
        if state.soundFormat.major == .wav {
            guard layout != .default(channelCount: state.layout.channelCount) else { return }
            var format = state.soundFormat
            format.major = .wavex
            try recreate(&state, layout: state.layout, format: format, transfer: state.transfer)
        }
        if [.wavex, .aiff, .caf, .rf64].contains(state.soundFormat.major) {
            try state.openSound().setChannelMap(map)
        }
    }

    // MARK: Bytes of values

    /// A property value's bytes (shared with PacketAudioFile).
    static func bytes<Value>(of value: Value) -> [UInt8] {
        withUnsafeBytes(of: value) { Array($0) }
    }

    /// Loads a fixed-size value, or '!siz' when `bytes` is not exactly its size.
    static func load<Value: BitwiseCopyable>(_ bytes: UnsafeRawBufferPointer) throws(AudioToolboxError) -> Value {
        guard bytes.count == MemoryLayout<Value>.size else {
            throw AudioToolboxError(kAudioFileBadPropertySizeError, "the value is \(MemoryLayout<Value>.size) bytes, not \(bytes.count)")
        }
        return bytes.loadUnaligned(as: Value.self)
    }
}
