import AudioCodec
import CAudioToolbox
import QueueCore

// Audio Converter Services: AudioConverterNew, FillComplexBuffer, ConvertBuffer, Dispose and
// the properties that describe the streams, on the codecs of the queues (AudioCodec, FFmpeg).

/// The object behind an AudioConverterRef.
final class AudioConverterObject: @unchecked Sendable {
    enum Mode { case decode, encode, pcm }

    let mode: Mode
    let input: AudioStreamBasicDescription
    private(set) var output: AudioStreamBasicDescription
    let channels: Int
    /// Linear PCM sides (the input of .encode and .pcm, the output of .decode and .pcm).
    let inputCodec: SampleCodec?
    let outputCodec: SampleCodec?
    private var decoder: PacketDecoder?
    private var cookie: [UInt8] = []
    private var encoder: PacketEncoder?
    private var bitRate: Int?
    private var started = false
    private var inputEnded = false
    /// Decoded (or converted) frames not yet handed out, from `pendingStart`.
    private let pending: GrowablePlanes
    /// The codec's result for a packet it refused in the current FillComplexBuffer call.
    private var decodeError: OSStatus?
    private var pendingStart = 0
    private var pendingCount = 0
    private let table: UnsafeMutablePointer<UnsafePointer<Float>>

    var ref: AudioConverterRef { OpaquePointer(Unmanaged.passUnretained(self).toOpaque()) }

    init(source: AudioStreamBasicDescription, destination: AudioStreamBasicDescription) throws {
        let sourceCodec = codecFormat(source)
        let destinationCodec = codecFormat(destination)
        func unsupported(_ why: String) -> AudioToolboxError { AudioToolboxError(kAudioConverterErr_FormatNotSupported, why) }
        guard source.mChannelsPerFrame == destination.mChannelsPerFrame else {
            throw unsupported("\(source.mChannelsPerFrame) to \(destination.mChannelsPerFrame) channels (no remixing)")
        }
        guard source.mSampleRate == destination.mSampleRate else {
            throw unsupported("\(source.mSampleRate) Hz to \(destination.mSampleRate) Hz (no sample-rate conversion)")
        }
        channels = Int(source.mChannelsPerFrame)
        input = source
        output = destination
        switch (sourceCodec, destinationCodec) {
        case (.some(let codec), nil):
            mode = .decode
            inputCodec = nil
            outputCodec = try Self.pcmCodec(destination)
            do {
                _ = try PacketDecoder(format: codec, cookie: [])
            } catch {
                if case .invalidCookie = error {} else { throw unsupported(error.description) }
            }
        case (nil, .some(let codec)):
            mode = .encode
            inputCodec = try Self.pcmCodec(source)
            outputCodec = nil
            do {
                encoder = try PacketEncoder(format: codec)
            } catch {
                throw unsupported(error.description)
            }
        case (nil, nil):
            mode = .pcm
            inputCodec = try Self.pcmCodec(source)
            outputCodec = try Self.pcmCodec(destination)
        case (.some, .some):
            throw unsupported("compressed to compressed (convert through linear PCM)")
        }
        pending = GrowablePlanes(channelCount: channels)
        table = .allocate(capacity: channels)
        if mode == .encode { output = completeCompressedOutput() }
    }

    deinit { table.deallocate() }

    private static func pcmCodec(_ asbd: AudioStreamBasicDescription) throws -> SampleCodec {
        do {
            return SampleCodec(format: try streamFormat(asbd, allowsZeroRate: false))
        } catch {
            throw AudioToolboxError(kAudioConverterErr_FormatNotSupported, "\(error)")
        }
    }

    private func completeCompressedOutput() -> AudioStreamBasicDescription {
        var format = output
        guard let encoder else { return format }
        format.mFramesPerPacket = UInt32(encoder.framesPerPacket)
        format.mBytesPerPacket = UInt32(CompressedFormat.constantBytesPerPacket(format.mFormatID, channels: channels))
        format.mBytesPerFrame = 0
        if encoder.sourceBits > 0 { format.mFormatFlags = CompressedFormat.losslessFlags(bits: encoder.sourceBits) }
        return format
    }

    var completeInput: AudioStreamBasicDescription {
        var format = input
        if mode == .decode {
            if format.mFramesPerPacket == 0 {
                format.mFramesPerPacket = UInt32(CompressedFormat.defaultFramesPerPacket(format.mFormatID, sampleRate: format.mSampleRate))
            }
            format.mBytesPerFrame = 0
        }
        return format
    }

    // MARK: Properties

    var maximumOutputPacketSize: Int {
        switch mode {
        case .encode: encoder?.maximumPacketSize ?? 0
        case .decode, .pcm: Int(output.mBytesPerFrame)
        }
    }

    func getProperty(_ id: AudioConverterPropertyID, _ out: PropertyIO) throws {
        switch id {
        case kAudioConverterCurrentInputStreamDescription: try out.put(completeInput)
        case kAudioConverterCurrentOutputStreamDescription: try out.put(output)
        case kAudioConverterPropertyMaximumOutputPacketSize: try out.put(UInt32(clamping: maximumOutputPacketSize))
        case kAudioConverterPropertyMaximumInputPacketSize:
            let size = mode == .decode ? 768 * channels * max(1, Int(input.mFramesPerPacket) / 1024) + 6144 : Int(input.mBytesPerFrame)
            try out.put(UInt32(clamping: size))
        case kAudioConverterDecompressionMagicCookie:
            guard mode == .decode else { throw notSupported(id) }
            try out.put(bytes: cookie)
        case kAudioConverterCompressionMagicCookie:
            guard mode == .encode, let encoder else { throw notSupported(id) }
            try out.put(bytes: encoder.cookie)
        case kAudioConverterEncodeBitRate:
            guard mode == .encode, let encoder else { throw notSupported(id) }
            try out.put(UInt32(clamping: encoder.bitRate))
        case kAudioConverterPrimeInfo:
            let leading = mode == .encode ? encoder?.primingFrames ?? 0 : 0
            try out.put(AudioConverterPrimeInfo(leadingFrames: UInt32(leading), trailingFrames: 0))
        default:
            throw notSupported(id)
        }
    }

    func propertySize(_ id: AudioConverterPropertyID) throws -> (size: UInt32, writable: Bool) {
        switch id {
        case kAudioConverterCurrentInputStreamDescription, kAudioConverterCurrentOutputStreamDescription:
            return (UInt32(MemoryLayout<AudioStreamBasicDescription>.size), false)
        case kAudioConverterPropertyMaximumOutputPacketSize, kAudioConverterPropertyMaximumInputPacketSize: return (4, false)
        case kAudioConverterDecompressionMagicCookie where mode == .decode: return (UInt32(cookie.count), true)
        case kAudioConverterCompressionMagicCookie where mode == .encode: return (UInt32(encoder?.cookie.count ?? 0), false)
        case kAudioConverterEncodeBitRate where mode == .encode: return (4, true)
        case kAudioConverterPrimeInfo: return (UInt32(MemoryLayout<AudioConverterPrimeInfo>.size), false)
        default: throw notSupported(id)
        }
    }

    func setProperty(_ id: AudioConverterPropertyID, _ data: UnsafeRawPointer?, _ size: UInt32) throws {
        switch id {
        case kAudioConverterDecompressionMagicCookie where mode == .decode:
            guard size == 0 || data != nil else { throw AudioToolboxError(kAudio_ParamError, "NULL inPropertyData") }
            let bytes = size == 0 ? [] : Array(UnsafeRawBufferPointer(start: data, count: Int(size)))
            guard let codec = codecFormat(input) else { throw notSupported(id) }
            do {
                decoder = try PacketDecoder(format: codec, cookie: bytes)
            } catch {
                throw AudioToolboxError(kAudioConverterErr_UnspecifiedError, "magic cookie: \(error)")
            }
            cookie = bytes
        case kAudioConverterEncodeBitRate where mode == .encode:
            let rate = Int(try value(data, size, as: UInt32.self, sizeError: kAudioConverterErr_BadPropertySizeError))
            guard !started else { throw AudioToolboxError(kAudioConverterErr_OperationNotSupported, "set the bit rate before converting") }
            guard let codec = codecFormat(output) else { throw notSupported(id) }
            do {
                encoder = try PacketEncoder(format: codec, bitRate: rate)
            } catch {
                throw AudioToolboxError(kAudioConverterErr_FormatNotSupported, "bit rate \(rate): \(error)")
            }
            bitRate = rate
            output = completeCompressedOutput()
        default:
            _ = try propertySize(id)
            throw AudioToolboxError(kAudioConverterErr_PropertyNotSupported, "property \(fourCharacterCode(id)) is read-only")
        }
    }

    private func notSupported(_ id: AudioConverterPropertyID) -> AudioToolboxError {
        AudioToolboxError(kAudioConverterErr_PropertyNotSupported, "property \(fourCharacterCode(id))")
    }

    // MARK: Converting

    func reset() {
        decoder?.reset()
        pendingStart = 0
        pendingCount = 0
        inputEnded = false
        if mode == .encode, let codec = codecFormat(output) {
            encoder = try? PacketEncoder(format: codec, bitRate: bitRate)
            started = false
        }
    }

    /// ConvertBuffer: linear PCM to linear PCM, whole frames.
    func convertBuffer(_ inSize: UInt32, _ inData: UnsafeRawPointer, _ outSize: UnsafeMutablePointer<UInt32>,
                       _ outData: UnsafeMutableRawPointer) throws {
        guard mode == .pcm, let inputCodec, let outputCodec else {
            throw AudioToolboxError(kAudioConverterErr_OperationNotSupported, "ConvertBuffer converts linear PCM only; use FillComplexBuffer")
        }
        let inBytes = Int(input.mBytesPerFrame), outBytes = Int(output.mBytesPerFrame)
        guard Int(inSize) % inBytes == 0 else { throw AudioToolboxError(kAudioConverterErr_InvalidInputSize, "\(inSize) bytes are not whole frames") }
        let frames = Int(inSize) / inBytes
        guard Int(outSize.pointee) >= frames * outBytes else {
            throw AudioToolboxError(kAudioConverterErr_InvalidOutputSize, "\(frames) frames need \(frames * outBytes) bytes")
        }
        pending.reserve(frames)
        inputCodec.decode(inData, frames: frames, into: UnsafePointer(pending.planes))
        outputCodec.encode(readable(at: 0), frames: frames, into: outData)
        outSize.pointee = UInt32(frames * outBytes)
    }

    private func readable(at offset: Int) -> UnsafePointer<UnsafePointer<Float>> {
        for c in 0..<channels { table[c] = UnsafePointer(pending.planes[c] + offset) }
        return UnsafePointer(table)
    }

    /// Appends `frames` frames of `planes` to what is pending.
    private func appendPending(_ planes: UnsafePointer<UnsafeMutablePointer<Float>>, frames: Int) {
        if pendingCount == 0 { pendingStart = 0 }
        let end = pendingStart + pendingCount
        pending.reserve(end + frames)
        for c in 0..<channels { (pending.planes[c] + end).update(from: planes[c], count: frames) }
        pendingCount += frames
    }

    typealias InputProc = AudioConverterComplexInputDataProc

    /// Asks the input proc for `packets` packets: (status, packets given, buffer list, descriptions).
    private func pull(_ proc: InputProc, _ user: UnsafeMutableRawPointer?, packets: Int)
        -> (OSStatus, Int, AudioBufferList, UnsafeMutablePointer<AudioStreamPacketDescription>?) {
        var count = UInt32(packets)
        var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: UInt32(channels), mDataByteSize: 0, mData: nil))
        var descriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?
        let status = proc(ref, &count, &list, &descriptions, user)
        return (status, Int(count), list, descriptions)
    }

    func fill(_ proc: InputProc, _ user: UnsafeMutableRawPointer?, _ ioPackets: UnsafeMutablePointer<UInt32>,
              _ outList: UnsafeMutablePointer<AudioBufferList>, _ outDescriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?) throws {
        started = true
        guard outList.pointee.mNumberBuffers == 1, let outData = outList.pointee.mBuffers.mData else {
            throw AudioToolboxError(kAudio_ParamError, "one interleaved AudioBuffer with data")
        }
        let capacityBytes = Int(outList.pointee.mBuffers.mDataByteSize)
        switch mode {
        case .decode, .pcm:
            let bytesPerFrame = Int(output.mBytesPerFrame)
            let want = min(Int(ioPackets.pointee), capacityBytes / bytesPerFrame)
            var produced = 0
            var status: OSStatus = noErr
            while produced < want {
                if pendingCount > 0 {
                    let n = min(pendingCount, want - produced)
                    outputCodec!.encode(readable(at: pendingStart), frames: n, into: outData + produced * bytesPerFrame)
                    pendingStart += n
                    pendingCount -= n
                    produced += n
                    continue
                }
                if inputEnded { break }
                let (result, count, list, descriptions) = pull(proc, user, packets: mode == .decode ? 1 : want - produced)
                if result != noErr { status = result; break }
                if count == 0 { inputEnded = true; break }
                guard let data = list.mBuffers.mData else { throw AudioToolboxError(kAudio_ParamError, "the input proc gave no data") }
                if mode == .pcm {
                    let frames = min(count, Int(list.mBuffers.mDataByteSize) / Int(input.mBytesPerFrame))
                    pending.reserve(frames)
                    pendingStart = 0
                    inputCodec!.decode(UnsafeRawPointer(data), frames: frames, into: UnsafePointer(pending.planes))
                    pendingCount = frames
                } else {
                    try decodePackets(data, count: count, bytes: Int(list.mBuffers.mDataByteSize), descriptions: descriptions)
                }
            }
            ioPackets.pointee = UInt32(produced)
            outList.pointee.mBuffers.mDataByteSize = UInt32(produced * bytesPerFrame)
            if status != noErr { throw AudioToolboxError(status, "the input proc's result") }
            if let error = decodeError {
                decodeError = nil
                throw AudioToolboxError(error, "a packet did not decode (its frames are silence)")
            }
        case .encode:
            guard let encoder else { throw AudioToolboxError(kAudioConverterErr_UnspecifiedError, "no encoder") }
            let constant = CompressedFormat.constantBytesPerPacket(output.mFormatID, channels: channels)
            guard outDescriptions != nil || constant > 0 else {
                throw AudioToolboxError(kAudioConverterErr_RequiresPacketDescriptionsError, "VBR output needs outPacketDescription")
            }
            let want = Int(ioPackets.pointee)
            var produced = 0
            var offset = 0
            var status: OSStatus = noErr
            while produced < want {
                if let packet = encoder.nextPacket() {
                    guard offset + packet.bytes.count <= capacityBytes else {
                        encoder.unread()
                        if produced == 0 {
                            throw AudioToolboxError(kAudioConverterErr_InvalidOutputSize,
                                                    "a \(packet.bytes.count)-byte packet does not fit \(capacityBytes) bytes")
                        }
                        break
                    }
                    packet.bytes.withUnsafeBytes { (outData + offset).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
                    outDescriptions?[produced] = AudioStreamPacketDescription(
                        mStartOffset: Int64(offset), mVariableFramesInPacket: packet.frames == encoder.framesPerPacket ? 0 : UInt32(packet.frames),
                        mDataByteSize: UInt32(packet.bytes.count))
                    offset += packet.bytes.count
                    produced += 1
                    continue
                }
                if inputEnded { break }
                let (result, count, list, _) = pull(proc, user, packets: encoder.framesPerPacket)
                if result != noErr { status = result; break }
                if count == 0 {
                    inputEnded = true
                    do { try encoder.finish() } catch { throw AudioToolboxError(kAudioConverterErr_UnspecifiedError, "\(error)") }
                    continue
                }
                guard let data = list.mBuffers.mData else { throw AudioToolboxError(kAudio_ParamError, "the input proc gave no data") }
                let frames = min(count, Int(list.mBuffers.mDataByteSize) / Int(input.mBytesPerFrame))
                pending.reserve(frames)
                inputCodec!.decode(UnsafeRawPointer(data), frames: frames, into: UnsafePointer(pending.planes))
                do { try encoder.encode(readable(at: 0), frames: frames) } catch {
                    throw AudioToolboxError(kAudioConverterErr_UnspecifiedError, "\(error)")
                }
            }
            ioPackets.pointee = UInt32(produced)
            outList.pointee.mBuffers.mDataByteSize = UInt32(offset)
            if status != noErr { throw AudioToolboxError(status, "the input proc's result") }
        }
    }

    /// Decodes the packets an input proc gave into `pending`; a packet the codec refuses is
    /// a packet of silence (as in output queues), and the codec's result ('bada' for a
    /// corrupt packet) is what the FillComplexBuffer call that decoded it returns.
    private func decodePackets(_ data: UnsafeMutableRawPointer, count: Int, bytes: Int,
                               descriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?) throws {
        if decoder == nil, let codec = codecFormat(input) {
            do { decoder = try PacketDecoder(format: codec, cookie: cookie) } catch {
                throw AudioToolboxError(kAudioConverterErr_UnspecifiedError, "decoder: \(error)")
            }
        }
        guard let decoder else { throw AudioToolboxError(kAudioConverterErr_UnspecifiedError, "no decoder") }
        let constant = Int(input.mBytesPerPacket)
        for i in 0..<count {
            let (offset, size): (Int, Int)
            if let descriptions {
                (offset, size) = (Int(descriptions[i].mStartOffset), Int(descriptions[i].mDataByteSize))
            } else if constant > 0 {
                (offset, size) = (i * constant, constant)
            } else {
                throw AudioToolboxError(kAudioConverterErr_RequiresPacketDescriptionsError, "VBR input needs packet descriptions")
            }
            guard offset >= 0, size > 0, offset <= bytes - size else {
                throw AudioToolboxError(kAudioConverterErr_InvalidInputSize, "packet \(i) lies outside the \(bytes) bytes given")
            }
            let (frames, error) = decoder.decodePacket(UnsafeRawBufferPointer(start: data + offset, count: size))
            appendPending(decoder.planes, frames: frames)
            if error != 0, decodeError == nil { decodeError = error }
        }
    }
}

/// The converters alive in this process.
enum AudioConverterRegistry {
    private static let live = LiveObjects<AudioConverterObject>()

    static func add(_ object: AudioConverterObject) { live.add(object, as: object.ref) }

    static func remove(_ ref: AudioConverterRef?) throws {
        live.remove(try object(ref).ref)
    }

    static func object(_ ref: AudioConverterRef?) throws -> AudioConverterObject {
        guard let ref, let object = live.object(ref) else {
            throw AudioToolboxError(kAudio_ParamError, "not a live AudioConverterRef")
        }
        return object
    }
}

@_cdecl("AudioConverterNew")
public func audioConverterNew(_ inSourceFormat: UnsafePointer<AudioStreamBasicDescription>?,
                              _ inDestinationFormat: UnsafePointer<AudioStreamBasicDescription>?,
                              _ outAudioConverter: UnsafeMutablePointer<AudioConverterRef?>?) -> OSStatus {
    withStatus {
        guard let inSourceFormat, let inDestinationFormat, let outAudioConverter else {
            throw AudioToolboxError(kAudio_ParamError, "NULL format or outAudioConverter")
        }
        outAudioConverter.pointee = nil
        let object = try AudioConverterObject(source: inSourceFormat.pointee, destination: inDestinationFormat.pointee)
        AudioConverterRegistry.add(object)
        outAudioConverter.pointee = object.ref
    }
}

@_cdecl("AudioConverterDispose")
public func audioConverterDispose(_ inAudioConverter: AudioConverterRef?) -> OSStatus {
    withStatus { try AudioConverterRegistry.remove(inAudioConverter) }
}

@_cdecl("AudioConverterReset")
public func audioConverterReset(_ inAudioConverter: AudioConverterRef?) -> OSStatus {
    withStatus { try AudioConverterRegistry.object(inAudioConverter).reset() }
}

@_cdecl("AudioConverterGetPropertyInfo")
public func audioConverterGetPropertyInfo(_ inAudioConverter: AudioConverterRef?, _ inPropertyID: AudioConverterPropertyID,
                                          _ outSize: UnsafeMutablePointer<UInt32>?, _ outWritable: UnsafeMutablePointer<Bool>?) -> OSStatus {
    withStatus {
        let info = try AudioConverterRegistry.object(inAudioConverter).propertySize(inPropertyID)
        outSize?.pointee = info.size
        outWritable?.pointee = info.writable
    }
}

@_cdecl("AudioConverterGetProperty")
public func audioConverterGetProperty(_ inAudioConverter: AudioConverterRef?, _ inPropertyID: AudioConverterPropertyID,
                                      _ ioPropertyDataSize: UnsafeMutablePointer<UInt32>?, _ outPropertyData: UnsafeMutableRawPointer?) -> OSStatus {
    withStatus {
        let object = try AudioConverterRegistry.object(inAudioConverter)
        guard let ioPropertyDataSize else { throw AudioToolboxError(kAudio_ParamError, "NULL ioPropertyDataSize") }
        try object.getProperty(inPropertyID, PropertyIO(data: outPropertyData, size: ioPropertyDataSize,
                                                        sizeError: kAudioConverterErr_BadPropertySizeError))
    }
}

@_cdecl("AudioConverterSetProperty")
public func audioConverterSetProperty(_ inAudioConverter: AudioConverterRef?, _ inPropertyID: AudioConverterPropertyID,
                                      _ inPropertyDataSize: UInt32, _ inPropertyData: UnsafeRawPointer?) -> OSStatus {
    withStatus { try AudioConverterRegistry.object(inAudioConverter).setProperty(inPropertyID, inPropertyData, inPropertyDataSize) }
}

@_cdecl("AudioConverterConvertBuffer")
public func audioConverterConvertBuffer(_ inAudioConverter: AudioConverterRef?, _ inInputDataSize: UInt32, _ inInputData: UnsafeRawPointer?,
                                        _ ioOutputDataSize: UnsafeMutablePointer<UInt32>?, _ outOutputData: UnsafeMutableRawPointer?) -> OSStatus {
    withStatus {
        let object = try AudioConverterRegistry.object(inAudioConverter)
        guard let inInputData, let ioOutputDataSize, let outOutputData else { throw AudioToolboxError(kAudio_ParamError, "NULL data or size") }
        try object.convertBuffer(inInputDataSize, inInputData, ioOutputDataSize, outOutputData)
    }
}

@_cdecl("AudioConverterFillComplexBuffer")
public func audioConverterFillComplexBuffer(_ inAudioConverter: AudioConverterRef?, _ inInputDataProc: AudioConverterComplexInputDataProc?,
                                            _ inInputDataProcUserData: UnsafeMutableRawPointer?,
                                            _ ioOutputDataPacketSize: UnsafeMutablePointer<UInt32>?,
                                            _ outOutputData: UnsafeMutablePointer<AudioBufferList>?,
                                            _ outPacketDescription: UnsafeMutablePointer<AudioStreamPacketDescription>?) -> OSStatus {
    withStatus {
        let object = try AudioConverterRegistry.object(inAudioConverter)
        guard let inInputDataProc, let ioOutputDataPacketSize, let outOutputData else {
            throw AudioToolboxError(kAudio_ParamError, "NULL input proc, packet count or output buffer list")
        }
        try object.fill(inInputDataProc, inInputDataProcUserData, ioOutputDataPacketSize, outOutputData, outPacketDescription)
    }
}
