import CAudioToolbox
import AudioCodec
import QueueCore

// The properties of files of packets: what the guides' player and recorder read
// (PacketSizeUpperBound, MaximumPacketSize, MagicCookieData, AudioDataPacketCount,
// PacketTableInfo) and set (MagicCookieData, ChannelLayout, PacketTableInfo).

extension PacketAudioFile {
    func propertyInfo(_ id: AudioFilePropertyID) throws -> (size: Int, isWritable: Bool) {
        try withOpenState { state in
            let size = try Self.value(of: id, state, input: UnsafeRawBufferPointer(start: nil, count: 0)).count
            return (size, Self.isWritable(id, state))
        }
    }

    func getProperty(_ id: AudioFilePropertyID, into buffer: UnsafeMutableRawPointer, capacity: Int) throws -> Int {
        try withOpenState { state in
            let value = try Self.value(of: id, state, input: UnsafeRawBufferPointer(start: buffer, count: capacity))
            guard capacity >= value.count else {
                throw AudioToolboxError(kAudioFileBadPropertySizeError,
                                        "\(fourCharacterCode(id)) needs \(value.count) bytes, not \(capacity)")
            }
            value.withUnsafeBytes { if $0.count > 0 { buffer.copyMemory(from: $0.baseAddress!, byteCount: $0.count) } }
            return value.count
        }
    }

    func setProperty(_ id: AudioFilePropertyID, from bytes: UnsafeRawBufferPointer) throws {
        try withOpenState { state in
            guard Self.settable.contains(id) else {
                if (try? Self.value(of: id, state, input: UnsafeRawBufferPointer(start: nil, count: 0))) != nil {
                    throw AudioToolboxError(kAudioFileOperationNotSupportedError, "\(fourCharacterCode(id)) is read-only")
                }
                throw AudioToolboxError(kAudioFileUnsupportedPropertyError, "unsupported property \(fourCharacterCode(id))")
            }
            guard state.canWrite else { throw AudioToolboxError(kAudioFilePermissionsError, "the file is not open for writing") }
            let started = state.mediaWriter?.hasStarted ?? false
            switch id {
            case kAudioFilePropertyMagicCookieData:
                // MPEG-4 stores the codec configuration in the header libavformat writes with
                // the first packet; CAF and ADTS take it until close.
                let cookie = Array(bytes)
                guard !started || cookie == state.cookie else {
                    throw AudioToolboxError(kAudioFileOperationNotSupportedError, "an MPEG-4 file's cookie is set before its first packet")
                }
                state.cookie = cookie.isEmpty ? nil : cookie
            case kAudioFilePropertyChannelLayout:
                let layout = try ChannelLayoutValue(bytes: bytes)
                guard layout.channelCount == Int(state.format.mChannelsPerFrame) else {
                    throw AudioToolboxError(kAudio_ParamError, "the layout has \(layout.channelCount) channels, the file \(state.format.mChannelsPerFrame)")
                }
                state.channelLayout = layout
            case kAudioFilePropertyPacketTableInfo:
                let info: AudioFilePacketTableInfo = try AudioFileObject.load(bytes)
                guard info.mPrimingFrames >= 0, info.mRemainderFrames >= 0, info.mNumberValidFrames >= 0 else {
                    throw AudioToolboxError(kAudio_ParamError, "negative frames in the packet table info")
                }
                guard !started || info.mPrimingFrames == state.index.primingFrames else {
                    throw AudioToolboxError(kAudioFileOperationNotSupportedError, "an MPEG-4 file's priming is set before its first packet")
                }
                state.index.primingFrames = info.mPrimingFrames
                state.index.remainderFrames = info.mRemainderFrames
            case kAudioFilePropertyJaqCrashSafeWrites:
                let crashSafe: UInt32 = try AudioFileObject.load(bytes)
                guard case .mpeg4(let muxer) = state.container, let writer = state.mediaWriter else {
                    throw AudioToolboxError(kAudioFileUnsupportedPropertyError, "crash-safe writes are for MPEG-4 files being created")
                }
                guard !started || (crashSafe != 0) == writer.isCrashSafe else {
                    throw AudioToolboxError(kAudioFileOperationNotSupportedError, "an MPEG-4 file is made crash-safe before its first packet")
                }
                if (crashSafe != 0) != writer.isCrashSafe {
                    state.mediaWriter = MediaFileWriter(path: state.path, formatName: muxer, crashSafe: crashSafe != 0)
                }
            default: // kAudioFilePropertyDeferSizeUpdates: sizes are written at close anyway.
                let _: UInt32 = try AudioFileObject.load(bytes)
            }
        }
    }

    private static let settable: Set<AudioFilePropertyID> = [
        kAudioFilePropertyMagicCookieData, kAudioFilePropertyChannelLayout, kAudioFilePropertyPacketTableInfo,
        kAudioFilePropertyDeferSizeUpdates, kAudioFilePropertyJaqCrashSafeWrites,
    ]

    private static func isWritable(_ id: AudioFilePropertyID, _ state: State) -> Bool {
        state.canWrite && settable.contains(id)
    }

    /// The value of a property as bytes; `input` is the caller's buffer (translations read it).
    private static func value(of id: AudioFilePropertyID, _ state: State, input: UnsafeRawBufferPointer) throws -> [UInt8] {
        let index = state.index
        switch id {
        case kAudioFilePropertyFileFormat: return AudioFileObject.bytes(of: state.fileType)
        case kAudioFilePropertyDataFormat: return AudioFileObject.bytes(of: state.format)
        case kAudioFilePropertyAudioDataPacketCount: return AudioFileObject.bytes(of: UInt64(index.entries.count))
        case kAudioFilePropertyAudioDataByteCount: return AudioFileObject.bytes(of: UInt64(index.byteCount))
        case kAudioFilePropertyMaximumPacketSize:
            // The largest packet in the file; before any is written, the format's bound.
            return AudioFileObject.bytes(of: index.maximumPacketSize > 0 ? index.maximumPacketSize : upperBound(state))
        case kAudioFilePropertyPacketSizeUpperBound: return AudioFileObject.bytes(of: max(upperBound(state), index.maximumPacketSize))
        case kAudioFilePropertyPacketTableInfo:
            return AudioFileObject.bytes(of: AudioFilePacketTableInfo(mNumberValidFrames: index.validFrameCount, mPrimingFrames: index.primingFrames,
                                                      mRemainderFrames: index.remainderFrames))
        case kAudioFilePropertyEstimatedDuration: return AudioFileObject.bytes(of: Float64(index.validFrameCount) / state.format.mSampleRate)
        case kAudioFilePropertyBitRate:
            guard index.frameCount > 0 else { return AudioFileObject.bytes(of: UInt32(clamping: state.declaredBitRate)) }
            return AudioFileObject.bytes(of: UInt32(clamping: Int64(Double(index.byteCount) * 8 * state.format.mSampleRate / Double(index.frameCount))))
        case kAudioFilePropertyIsOptimized: return AudioFileObject.bytes(of: UInt32(1))
        case kAudioFilePropertyDeferSizeUpdates: return AudioFileObject.bytes(of: UInt32(0))
        case kAudioFilePropertyDataOffset: return AudioFileObject.bytes(of: state.dataOffset)
        case kAudioFilePropertySourceBitDepth:
            guard state.sourceBitDepth > 0 else {
                throw AudioToolboxError(kAudioFileUnsupportedPropertyError, "\(state.compressed) has no source bit depth")
            }
            return AudioFileObject.bytes(of: Int32(state.sourceBitDepth))
        case kAudioFilePropertyMagicCookieData:
            guard let cookie = state.cookie else {
                throw AudioToolboxError(kAudioFileUnsupportedPropertyError, "this file has no magic cookie")
            }
            return cookie
        case kAudioFilePropertyChannelLayout:
            let layout = state.channelLayout ?? .default(channelCount: Int(state.format.mChannelsPerFrame))
            var value = [UInt8](repeating: 0, count: layout.byteCount)
            value.withUnsafeMutableBytes { layout.store(into: $0.baseAddress!) }
            return value
        case kAudioFilePropertyPacketToFrame, kAudioFilePropertyFrameToPacket:
            var translation = input.count >= MemoryLayout<AudioFramePacketTranslation>.size
                ? input.loadUnaligned(as: AudioFramePacketTranslation.self) : AudioFramePacketTranslation()
            if id == kAudioFilePropertyPacketToFrame {
                guard let frame = frame(ofPacket: translation.mPacket, index) else {
                    throw AudioToolboxError(kAudioFileInvalidPacketOffsetError, "packet \(translation.mPacket) is not in the file")
                }
                translation.mFrame = frame
                translation.mFrameOffsetInPacket = 0
            } else {
                guard let (packet, offset) = packet(ofFrame: translation.mFrame, index) else {
                    throw AudioToolboxError(kAudioFileInvalidPacketOffsetError, "frame \(translation.mFrame) is not in the file")
                }
                translation.mPacket = packet
                translation.mFrameOffsetInPacket = offset
            }
            return AudioFileObject.bytes(of: translation)
        case kAudioFilePropertyPacketToByte, kAudioFilePropertyByteToPacket:
            var translation = input.count >= MemoryLayout<AudioBytePacketTranslation>.size
                ? input.loadUnaligned(as: AudioBytePacketTranslation.self) : AudioBytePacketTranslation()
            if id == kAudioFilePropertyPacketToByte {
                guard translation.mPacket >= 0, translation.mPacket <= Int64(index.entries.count) else {
                    throw AudioToolboxError(kAudioFileInvalidPacketOffsetError, "packet \(translation.mPacket) is not in the file")
                }
                translation.mByte = index.entries.prefix(Int(translation.mPacket)).reduce(0) { $0 + Int64($1.byteCount) }
                translation.mByteOffsetInPacket = 0
            } else {
                guard translation.mByte >= 0 else {
                    throw AudioToolboxError(kAudioFilePositionError, "byte \(translation.mByte) is before the audio data")
                }
                var start: Int64 = 0
                var packet = 0
                while packet < index.entries.count, start + Int64(index.entries[packet].byteCount) <= translation.mByte {
                    start += Int64(index.entries[packet].byteCount)
                    packet += 1
                }
                translation.mPacket = Int64(packet)
                translation.mByteOffsetInPacket = UInt32(truncatingIfNeeded: translation.mByte - start)
            }
            translation.mFlags = []
            return AudioFileObject.bytes(of: translation)
        default:
            throw AudioToolboxError(kAudioFileUnsupportedPropertyError, "unsupported property \(fourCharacterCode(id))")
        }
    }

    private static func upperBound(_ state: State) -> UInt32 {
        if state.format.mBytesPerPacket > 0 { return state.format.mBytesPerPacket }
        return UInt32(state.compressed.packetSizeUpperBound(channels: Int(state.format.mChannelsPerFrame),
                                                            framesPerPacket: Int(state.format.mFramesPerPacket),
                                                            bitsPerSample: state.sourceBitDepth))
    }

    /// The first frame of `packet` (packets may end the file: `count` gives the frame count).
    private static func frame(ofPacket packet: Int64, _ index: PacketIndex) -> Int64? {
        guard packet >= 0, packet <= Int64(index.entries.count) else { return nil }
        if index.framesPerPacket > 0 { return packet * Int64(index.framesPerPacket) }
        return index.entries.prefix(Int(packet)).reduce(0) { $0 + Int64($1.frameCount) }
    }

    /// The packet holding `frame` and the frame's offset in it.
    private static func packet(ofFrame frame: Int64, _ index: PacketIndex) -> (Int64, UInt32)? {
        guard frame >= 0 else { return nil }
        if index.framesPerPacket > 0 {
            let (packet, offset) = frame.quotientAndRemainder(dividingBy: Int64(index.framesPerPacket))
            return (packet, UInt32(offset))
        }
        var start: Int64 = 0
        for (number, entry) in index.entries.enumerated() {
            if frame < start + Int64(entry.frameCount) { return (Int64(number), UInt32(frame - start)) }
            start += Int64(entry.frameCount)
        }
        return frame == start ? (Int64(index.entries.count), 0) : nil
    }
}
