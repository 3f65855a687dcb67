import CAudioToolbox
import AudioCodec

// ExtAudioFileGetPropertyInfo / GetProperty / SetProperty: Apple's property IDs, with
// kExtAudioFileError_InvalidProperty for one not known (or not settable) and
// kExtAudioFileError_InvalidPropertySize for a buffer of the wrong size.

extension ExtAudioFileObject {
    /// The value of a property as bytes.
    private func value(of id: ExtAudioFilePropertyID) throws -> [UInt8] {
        switch id {
        case kExtAudioFileProperty_FileDataFormat: return bytes(of: fileFormat)
        case kExtAudioFileProperty_ClientDataFormat:
            guard let clientFormat else { return bytes(of: fileFormat) }
            return bytes(of: clientFormat)
        case kExtAudioFileProperty_FileChannelLayout: return try fileLayout()
        case kExtAudioFileProperty_ClientChannelLayout: return try clientLayout ?? fileLayout()
        case kExtAudioFileProperty_CodecManufacturer: return bytes(of: codecManufacturer)
        case kExtAudioFileProperty_AudioConverter: return bytes(of: converter)
        case kExtAudioFileProperty_AudioFile: return bytes(of: file)
        case kExtAudioFileProperty_FileMaxPacketSize:
            let size = isPCMFile ? Int(fileFormat.mBytesPerPacket) : fileMaxPacketSize
            guard size > 0 || mode == .writing else { throw AudioToolboxError(kExtAudioFileError_MaxPacketSizeUnknown, "the file's packets are of unknown size") }
            return bytes(of: UInt32(clamping: size > 0 ? size : maximumEncoderPacketSize()))
        case kExtAudioFileProperty_ClientMaxPacketSize:
            return bytes(of: UInt32((clientFormat ?? fileFormat).mBytesPerPacket))
        case kExtAudioFileProperty_FileLengthFrames:
            return bytes(of: mode == .reading ? packetTable.validFrames : validFileFrames)
        case kExtAudioFileProperty_IOBufferSizeBytes: return bytes(of: UInt32(clamping: ioBufferBytes))
        case kExtAudioFileProperty_PacketTable:
            guard !isPCMFile else { throw AudioToolboxError(kExtAudioFileError_InvalidProperty, "a linear PCM file has no packet table") }
            if mode == .writing {
                return bytes(of: AudioFilePacketTableInfo(mNumberValidFrames: validFileFrames,
                                                          mPrimingFrames: Int32(clamping: writeState.primingFrames), mRemainderFrames: 0))
            }
            return bytes(of: packetTable.info)
        case kExtAudioFileProperty_ConverterConfig:
            return bytes(of: UnsafeRawPointer?.none)
        default:
            throw AudioToolboxError(kExtAudioFileError_InvalidProperty, "property \(fourCharacterCode(id))")
        }
    }

    private func maximumEncoderPacketSize() -> Int {
        guard let converter else { return 0 }
        var size: UInt32 = 0
        var bytes = UInt32(4)
        _ = audioConverterGetProperty(converter, kAudioConverterPropertyMaximumOutputPacketSize, &bytes, &size)
        return Int(size)
    }

    func fileLayout() throws -> [UInt8] {
        if let file {
            var size: UInt32 = 0
            var writable: UInt32 = 0
            if audioFileGetPropertyInfo(file, kAudioFilePropertyChannelLayout, &size, &writable) == noErr, size > 0 {
                var layout = [UInt8](repeating: 0, count: Int(size))
                if layout.withUnsafeMutableBytes({ audioFileGetProperty(file, kAudioFilePropertyChannelLayout, &size, $0.baseAddress) }) == noErr {
                    return Array(layout.prefix(Int(size)))
                }
            }
        }
        if let layout = pendingCreate?.layout { return layout }
        return ChannelLayoutValue.default(channelCount: Int(fileFormat.mChannelsPerFrame)).layoutBytes
    }

    private static let writable: Set<ExtAudioFilePropertyID> = [
        kExtAudioFileProperty_ClientDataFormat, kExtAudioFileProperty_ClientChannelLayout, kExtAudioFileProperty_FileChannelLayout,
        kExtAudioFileProperty_CodecManufacturer, kExtAudioFileProperty_ConverterConfig, kExtAudioFileProperty_IOBufferSizeBytes,
        kExtAudioFileProperty_PacketTable,
    ]

    func propertyInfo(_ id: ExtAudioFilePropertyID) throws -> (size: UInt32, writable: Bool) {
        (UInt32(try value(of: id).count), Self.writable.contains(id))
    }

    func getProperty(_ id: ExtAudioFilePropertyID, _ ioSize: UnsafeMutablePointer<UInt32>, _ out: UnsafeMutableRawPointer) throws {
        try settleAsyncWrites()
        let bytes = try value(of: id)
        guard Int(ioSize.pointee) >= bytes.count else {
            throw AudioToolboxError(kExtAudioFileError_InvalidPropertySize, "\(fourCharacterCode(id)) is \(bytes.count) bytes, not \(ioSize.pointee)")
        }
        bytes.withUnsafeBytes { if $0.count > 0 { out.copyMemory(from: $0.baseAddress!, byteCount: $0.count) } }
        ioSize.pointee = UInt32(bytes.count)
    }

    func setProperty(_ id: ExtAudioFilePropertyID, _ size: UInt32, _ data: UnsafeRawPointer?) throws {
        try settleAsyncWrites()
        func load<T: BitwiseCopyable>(_: T.Type) throws -> T {
            guard size == MemoryLayout<T>.size else {
                throw AudioToolboxError(kExtAudioFileError_InvalidPropertySize, "\(fourCharacterCode(id)) is \(MemoryLayout<T>.size) bytes, not \(size)")
            }
            guard let data else { throw AudioToolboxError(kAudio_ParamError, "inPropertyData is NULL") }
            return data.loadUnaligned(as: T.self)
        }
        switch id {
        case kExtAudioFileProperty_ClientDataFormat:
            try setClientFormat(try load(AudioStreamBasicDescription.self))
        case kExtAudioFileProperty_ClientChannelLayout:
            let layout = try layoutBytes(size, data)
            guard let clientFormat else { throw AudioToolboxError(kExtAudioFileError_InvalidOperationOrder, "set the client format first") }
            guard try channelCount(of: layout) == Int(clientFormat.mChannelsPerFrame) else {
                throw AudioToolboxError(kExtAudioFileError_InvalidChannelMap, "the layout's channels are not the client format's \(clientFormat.mChannelsPerFrame)")
            }
            clientLayout = layout
            try applyChannelLayouts()
        case kExtAudioFileProperty_FileChannelLayout:
            let layout = try layoutBytes(size, data)
            guard try channelCount(of: layout) == Int(fileFormat.mChannelsPerFrame) else {
                throw AudioToolboxError(kExtAudioFileError_InvalidChannelMap, "the layout's channels are not the file's \(fileFormat.mChannelsPerFrame)")
            }
            guard mode == .writing, let file else {
                throw AudioToolboxError(kExtAudioFileError_InvalidOperationOrder, "the file's layout is set on a file being written")
            }
            try check(layout.withUnsafeBytes { audioFileSetProperty(file, kAudioFilePropertyChannelLayout, size, $0.baseAddress) }, "the file's channel layout")
        case kExtAudioFileProperty_CodecManufacturer:
            let value = try load(UInt32.self)
            guard converter == nil || isPCMFile else {
                throw AudioToolboxError(kExtAudioFileError_InvalidOperationOrder, "the codec is chosen before the client format")
            }
            codecManufacturer = value
        case kExtAudioFileProperty_ConverterConfig:
            // (0, NULL) or a NULL CFArrayRef, in either mode: "the converter's properties
            // changed". jaq reads the converter's settings (cookie, priming, packet size) when it
            // needs them, so there is nothing to re-apply.
            if size == 0 || data == nil { break }
            guard try load(UnsafeRawPointer?.self) == nil else {
                throw AudioToolboxError(kExtAudioFileError_InvalidProperty, "a converter configuration array (only NULL, resynchronise, is taken)")
            }
        case kExtAudioFileProperty_IOBufferSizeBytes:
            let value = try load(UInt32.self)
            guard value >= 1024 else { throw AudioToolboxError(kAudio_ParamError, "an I/O buffer of \(value) bytes") }
            ioBufferBytes = Int(value)
        case kExtAudioFileProperty_PacketTable:
            let info = try load(AudioFilePacketTableInfo.self)
            guard mode == .reading, !isPCMFile else {
                throw AudioToolboxError(kExtAudioFileError_InvalidProperty, "the packet table is overridden on a compressed file being read")
            }
            try packetTable.override(with: info)
            position = min(currentFrame, packetTable.validFrames)
            readState.clientFramesRead = 0
            readState.needsReposition = true
        default:
            _ = try value(of: id)
            throw AudioToolboxError(kExtAudioFileError_InvalidProperty, "\(fourCharacterCode(id)) is read-only")
        }
    }

    private func channelCount(of layout: [UInt8]) throws -> Int {
        do {
            return try layout.withUnsafeBytes { try ChannelLayoutValue(bytes: $0) }.channelCount
        } catch {
            throw AudioToolboxError(kExtAudioFileError_InvalidPropertySize, "\(error)")
        }
    }

    private func layoutBytes(_ size: UInt32, _ data: UnsafeRawPointer?) throws -> [UInt8] {
        guard let data else { throw AudioToolboxError(kAudio_ParamError, "inPropertyData is NULL") }
        guard size >= UInt32(ChannelLayoutValue.headerSize) else {
            throw AudioToolboxError(kExtAudioFileError_InvalidPropertySize, "an AudioChannelLayout of \(size) bytes")
        }
        return Array(UnsafeRawBufferPointer(start: data, count: Int(size)))
    }
}

private func bytes<T: BitwiseCopyable>(of value: T) -> [UInt8] {
    withUnsafeBytes(of: value) { Array($0) }
}

extension ChannelLayoutValue {
    /// The AudioChannelLayout value as bytes.
    var layoutBytes: [UInt8] {
        var bytes = [UInt8](repeating: 0, count: byteCount)
        bytes.withUnsafeMutableBytes { store(into: $0.baseAddress!) }
        return bytes
    }
}
