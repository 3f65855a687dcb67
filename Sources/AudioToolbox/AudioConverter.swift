import AudioCodec
import CAudioToolbox
import QueueCore

// Audio Converter Services: AudioConverterNew, FillComplexBuffer, ConvertBuffer, Dispose and
// the properties that describe the streams, on the codecs of the queues (AudioCodec, FFmpeg).

/// The object behind an AudioConverterRef: input side (decoder, or linear PCM) → channel
/// routing → resampler → output side (encoder, or linear PCM), in planar Float32 between.
final class AudioConverterObject: @unchecked Sendable {
    enum Mode { case decode, encode, pcm }

    let mode: Mode
    let input: AudioStreamBasicDescription
    var output: AudioStreamBasicDescription
    let inputChannels: Int
    let outputChannels: Int
    /// Linear PCM sides (the input of .encode and .pcm, the output of .decode and .pcm).
    let inputPCM: PCMBuffers?
    let outputPCM: PCMBuffers?
    var routing: ChannelRouting
    /// The resampler, when the rates differ.
    let rate: RateStage?
    var decoder: PacketDecoder?
    var cookie: [UInt8] = []
    var encoder: PacketEncoder?
    var bitRate: Int?
    /// kAudioConverterCodecQuality as set (FFmpeg's encoders take none).
    var codecQuality = kAudioConverterQuality_High
    var started = false
    private var inputEnded = false
    /// Converted frames (output channels and rate) not yet handed out, from `pendingStart`.
    private let pending: GrowablePlanes
    /// Input frames as decoded, and as routed to the output's channels.
    private let staging: GrowablePlanes
    private let routed: GrowablePlanes
    /// The codec's result for a packet it refused in the current FillComplexBuffer call.
    private var decodeError: OSStatus?
    private var pendingStart = 0
    private var pendingCount = 0
    private let table: UnsafeMutablePointer<UnsafePointer<Float>>
    private let writeTable: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    /// The AudioBufferList handed to the input proc (one buffer per channel when non-interleaved).
    private let inputList: UnsafeMutablePointer<AudioBufferList>

    var ref: AudioConverterRef { OpaquePointer(Unmanaged.passUnretained(self).toOpaque()) }

    init(source: AudioStreamBasicDescription, destination: AudioStreamBasicDescription) throws {
        func unsupported(_ why: String) -> AudioToolboxError { AudioToolboxError(kAudioConverterErr_FormatNotSupported, why) }
        for (format, code) in [(source, kAudioConverterErr_InputSampleRateOutOfRange), (destination, kAudioConverterErr_OutputSampleRateOutOfRange)] {
            guard format.mSampleRate.isFinite, format.mSampleRate >= 1, format.mSampleRate <= 768_000 else {
                throw AudioToolboxError(code, "sample rate \(format.mSampleRate)")
            }
            guard (1...UInt32(StreamFormat.maximumChannels)).contains(format.mChannelsPerFrame) else {
                throw unsupported("\(format.mChannelsPerFrame) channels (1...\(StreamFormat.maximumChannels))")
            }
        }
        inputChannels = Int(source.mChannelsPerFrame)
        outputChannels = Int(destination.mChannelsPerFrame)
        input = source
        output = destination
        switch (codecFormat(source), codecFormat(destination)) {
        case (.some(let codec), nil):
            mode = .decode
            inputPCM = nil
            outputPCM = try PCMBuffers(destination)
            do {
                _ = try PacketDecoder(format: codec, cookie: [])
            } catch {
                if case .invalidCookie = error {} else { throw unsupported(error.description) }
            }
        case (nil, .some(let codec)):
            mode = .encode
            inputPCM = try PCMBuffers(source)
            outputPCM = nil
            do {
                encoder = try PacketEncoder(format: codec)
            } catch {
                throw unsupported(error.description)
            }
        case (nil, nil):
            mode = .pcm
            inputPCM = try PCMBuffers(source)
            outputPCM = try PCMBuffers(destination)
        case (.some, .some):
            throw unsupported("compressed to compressed (convert through linear PCM)")
        }
        routing = ChannelRouting(input: inputChannels, output: outputChannels)
        rate = source.mSampleRate == destination.mSampleRate ? nil
            : try RateStage(inputRate: source.mSampleRate, outputRate: destination.mSampleRate, channels: outputChannels)
        pending = GrowablePlanes(channelCount: outputChannels)
        staging = GrowablePlanes(channelCount: inputChannels)
        routed = GrowablePlanes(channelCount: outputChannels)
        table = .allocate(capacity: outputChannels)
        writeTable = .allocate(capacity: outputChannels)
        let listBytes = converterBufferListSize(inputChannels)
        inputList = UnsafeMutableRawPointer.allocate(byteCount: listBytes, alignment: 16).bindMemory(to: AudioBufferList.self, capacity: 1)
        if mode == .encode { output = completeCompressedOutput() }
    }

    deinit {
        table.deallocate()
        writeTable.deallocate()
        inputList.deallocate()
    }

    func completeCompressedOutput() -> AudioStreamBasicDescription {
        var format = output
        guard let encoder else { return format }
        format.mFramesPerPacket = UInt32(encoder.framesPerPacket)
        format.mBytesPerPacket = UInt32(CompressedFormat.constantBytesPerPacket(format.mFormatID, channels: outputChannels))
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

    // MARK: Converting

    func reset() {
        decoder?.reset()
        rate?.reset()
        pendingStart = 0
        pendingCount = 0
        inputEnded = false
        started = false
        if mode == .encode, let codec = codecFormat(output) {
            encoder = try? PacketEncoder(format: codec, bitRate: bitRate)
        }
    }

    /// ConvertBuffer: interleaved linear PCM to interleaved linear PCM, whole frames.
    func convertBuffer(_ inSize: UInt32, _ inData: UnsafeRawPointer, _ outSize: UnsafeMutablePointer<UInt32>,
                       _ outData: UnsafeMutableRawPointer) throws {
        try checkConvertible()
        guard let inputPCM, let outputPCM, !inputPCM.nonInterleaved, !outputPCM.nonInterleaved else {
            throw AudioToolboxError(kAudioConverterErr_OperationNotSupported, "ConvertBuffer takes interleaved PCM; use ConvertComplexBuffer")
        }
        guard Int(inSize) % inputPCM.bytesPerFrame == 0 else {
            throw AudioToolboxError(kAudioConverterErr_InvalidInputSize, "\(inSize) bytes are not whole frames")
        }
        let frames = Int(inSize) / inputPCM.bytesPerFrame
        var inList = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: UInt32(inputChannels), mDataByteSize: inSize,
                                                                               mData: UnsafeMutableRawPointer(mutating: inData)))
        var outList = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: UInt32(outputChannels),
                                                                                mDataByteSize: outSize.pointee, mData: outData))
        try convertComplex(frames, &inList, &outList)
        outSize.pointee = outList.mBuffers.mDataByteSize
    }

    /// ConvertBuffer and ConvertComplexBuffer convert linear PCM at one rate only.
    private func checkConvertible() throws {
        guard mode == .pcm else {
            throw AudioToolboxError(kAudioConverterErr_OperationNotSupported, "converts linear PCM only; use FillComplexBuffer")
        }
        guard rate == nil else {
            throw AudioToolboxError(kAudioConverterErr_InvalidInputSize, "a sample-rate conversion has no fixed output size; use FillComplexBuffer")
        }
    }

    /// ConvertComplexBuffer: `frames` frames of linear PCM from one buffer list to another.
    func convertComplex(_ frames: Int, _ inList: UnsafeMutablePointer<AudioBufferList>, _ outList: UnsafeMutablePointer<AudioBufferList>) throws {
        try checkConvertible()
        guard let inputPCM, let outputPCM else { return }
        guard try inputPCM.frames(in: inList, what: "inInputData") >= frames else {
            throw AudioToolboxError(kAudioConverterErr_InvalidInputSize, "inInputData holds fewer than \(frames) frames")
        }
        guard try outputPCM.frames(in: outList, what: "outOutputData") >= frames else {
            throw AudioToolboxError(kAudioConverterErr_InvalidOutputSize, "\(frames) frames need \(frames * outputPCM.bytesPerFrame) bytes a buffer")
        }
        pendingStart = 0
        pendingCount = 0
        staging.reserve(frames)
        inputPCM.decode(inList, frames: frames, into: UnsafePointer(staging.planes))
        try ingest(UnsafePointer(staging.planes), frames: frames)
        outputPCM.encode(readable(at: pendingStart), frames: frames, into: outList, at: 0)
        outputPCM.setSize(outList, frames: frames)
        pendingCount = 0
    }

    private func readable(at offset: Int) -> UnsafePointer<UnsafePointer<Float>> {
        for c in 0..<outputChannels { table[c] = UnsafePointer(pending.planes[c] + offset) }
        return UnsafePointer(table)
    }

    /// Routes and resamples `frames` input frames onto what is pending.
    private func ingest(_ planes: UnsafePointer<UnsafeMutablePointer<Float>>, frames: Int) throws {
        if pendingCount == 0 { pendingStart = 0 }
        var source = planes
        if !routing.isIdentity {
            routed.reserve(frames)
            routing.route(planes, frames: frames, into: UnsafePointer(routed.planes))
            source = UnsafePointer(routed.planes)
        }
        let end = pendingStart + pendingCount
        if let rate {
            pendingCount += try rate.process(source, frames: frames, into: pending, at: end)
        } else {
            pending.reserve(end + frames)
            for c in 0..<outputChannels { (pending.planes[c] + end).update(from: source[c], count: frames) }
            pendingCount += frames
        }
    }

    /// The input proc said the input ended: the resampler's tail joins what is pending.
    private func endInput() {
        inputEnded = true
        if pendingCount == 0 { pendingStart = 0 }
        if let rate { pendingCount += rate.flush(into: pending, at: pendingStart + pendingCount) }
    }

    typealias InputProc = AudioConverterComplexInputDataProc

    /// Asks the input proc for `packets` packets: (status, packets given, descriptions), the data in `inputList`.
    private func pull(_ proc: InputProc, _ user: UnsafeMutableRawPointer?, packets: Int)
        -> (OSStatus, Int, UnsafeMutablePointer<AudioStreamPacketDescription>?) {
        var count = UInt32(clamping: max(packets, 1))
        let buffers = inputPCM?.bufferCount ?? 1
        inputList.pointee.mNumberBuffers = UInt32(buffers)
        let list = converterBuffers(inputList, buffers)
        for b in 0..<buffers {
            list[b] = AudioBuffer(mNumberChannels: UInt32(buffers == 1 ? inputChannels : 1), mDataByteSize: 0, mData: nil)
        }
        var descriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?
        let status = proc(ref, &count, inputList, &descriptions, user)
        return (status, Int(count), descriptions)
    }

    /// Input frames to ask for `outputFrames` output frames: through a resampler at least 512,
    /// as libsoxr holds back its filter's reach and works in blocks (what is left over stays
    /// pending for the next call).
    private func inputFrames(for outputFrames: Int) -> Int {
        guard let rate else { return outputFrames }
        return max(512, Int((Double(outputFrames) * rate.inputRate / rate.outputRate).rounded(.up)))
    }

    /// Takes the PCM frames the input proc gave (at most `count`) onto what is pending.
    private func ingestPCM(count: Int) throws {
        guard let inputPCM else { return }
        let frames = min(count, try inputPCM.frames(in: inputList, what: "the input proc's ioData"))
        if rate == nil && routing.isIdentity {
            // Nothing between the sides: decode onto what is pending.
            if pendingCount == 0 { pendingStart = 0 }
            let end = pendingStart + pendingCount
            pending.reserve(end + frames)
            for c in 0..<outputChannels { writeTable[c] = pending.planes[c] + end }
            inputPCM.decode(inputList, frames: frames, into: UnsafePointer(writeTable))
            pendingCount += frames
            return
        }
        staging.reserve(frames)
        inputPCM.decode(inputList, frames: frames, into: UnsafePointer(staging.planes))
        try ingest(UnsafePointer(staging.planes), frames: frames)
    }

    func fill(_ proc: InputProc, _ user: UnsafeMutableRawPointer?, _ ioPackets: UnsafeMutablePointer<UInt32>,
              _ outList: UnsafeMutablePointer<AudioBufferList>, _ outDescriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?) throws {
        started = true
        if mode == .encode {
            try fillEncoded(proc, user, ioPackets, outList, outDescriptions)
            return
        }
        guard let outputPCM else { return }
        let want = min(Int(ioPackets.pointee), try outputPCM.frames(in: outList, what: "outOutputData"))
        var produced = 0
        var status: OSStatus = noErr
        defer {
            ioPackets.pointee = UInt32(produced)
            outputPCM.setSize(outList, frames: produced)
        }
        while produced < want {
            if pendingCount > 0 {
                let n = min(pendingCount, want - produced)
                outputPCM.encode(readable(at: pendingStart), frames: n, into: outList, at: produced)
                pendingStart += n
                pendingCount -= n
                produced += n
                continue
            }
            if inputEnded { break }
            let (result, count, descriptions) = pull(proc, user, packets: mode == .decode ? 1 : inputFrames(for: want - produced))
            if result != noErr { status = result; break }
            if count == 0 { endInput(); continue }
            if mode == .pcm {
                try ingestPCM(count: count)
            } else {
                let buffer = inputList.pointee.mBuffers
                guard let data = buffer.mData else { throw AudioToolboxError(kAudio_ParamError, "the input proc gave no data") }
                try decodePackets(data, count: count, bytes: Int(buffer.mDataByteSize), descriptions: descriptions)
            }
        }
        if status != noErr { throw AudioToolboxError(status, "the input proc's result") }
        if let error = decodeError {
            decodeError = nil
            throw AudioToolboxError(error, "a packet did not decode (its frames are silence)")
        }
    }

    /// Hands what is pending to the encoder.
    private func encodePending(_ encoder: PacketEncoder) throws {
        guard pendingCount > 0 else { return }
        do { try encoder.encode(readable(at: pendingStart), frames: pendingCount) } catch {
            throw AudioToolboxError(kAudioConverterErr_UnspecifiedError, "\(error)")
        }
        pendingStart = 0
        pendingCount = 0
    }

    private func fillEncoded(_ proc: InputProc, _ user: UnsafeMutableRawPointer?, _ ioPackets: UnsafeMutablePointer<UInt32>,
                             _ outList: UnsafeMutablePointer<AudioBufferList>,
                             _ outDescriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?) throws {
        guard let encoder else { throw AudioToolboxError(kAudioConverterErr_UnspecifiedError, "no encoder") }
        guard outList.pointee.mNumberBuffers == 1, let outData = outList.pointee.mBuffers.mData else {
            throw AudioToolboxError(kAudio_ParamError, "one AudioBuffer with data")
        }
        let capacityBytes = Int(outList.pointee.mBuffers.mDataByteSize)
        let constant = CompressedFormat.constantBytesPerPacket(output.mFormatID, channels: outputChannels)
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
            let (result, count, _) = pull(proc, user, packets: inputFrames(for: encoder.framesPerPacket))
            if result != noErr { status = result; break }
            if count == 0 {
                endInput()
                try encodePending(encoder)
                do { try encoder.finish() } catch { throw AudioToolboxError(kAudioConverterErr_UnspecifiedError, "\(error)") }
                continue
            }
            try ingestPCM(count: count)
            try encodePending(encoder)
        }
        ioPackets.pointee = UInt32(produced)
        outList.pointee.mBuffers.mDataByteSize = UInt32(offset)
        if status != noErr { throw AudioToolboxError(status, "the input proc's result") }
    }

    /// Decodes the packets an input proc gave onto what is pending; a packet the codec refuses is
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
            try ingest(UnsafePointer(decoder.planes), frames: frames)
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

