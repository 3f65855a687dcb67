import AudioCodec
import CAudioToolbox

// The properties of a converter: the streams, the codec's, the channel map, the resampler's
// and the buffer-size calculations.

extension AudioConverterObject {
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
            let size = mode == .decode ? 768 * inputChannels * max(1, Int(input.mFramesPerPacket) / 1024) + 6144 : Int(input.mBytesPerFrame)
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
            // An encoder's priming (what a file's packet table records), else the resampler's reach.
            if mode == .encode {
                try out.put(AudioConverterPrimeInfo(leadingFrames: UInt32(encoder?.primingFrames ?? 0), trailingFrames: 0))
            } else {
                try out.put(rate?.primeInfo ?? AudioConverterPrimeInfo())
            }
        case kAudioConverterPrimeMethod: try out.put(rate?.primeMethod ?? kConverterPrimeMethod_Normal)
        case kAudioConverterCodecQuality where mode == .encode: try out.put(codecQuality)
        case kAudioConverterSampleRateConverterQuality:
            guard let rate else { throw notSupported(id) }
            try out.put(rate.quality)
        case kAudioConverterSampleRateConverterComplexity:
            guard let rate else { throw notSupported(id) }
            try out.put(rate.complexity)
        case kAudioConverterChannelMap:
            let bytes = routing.map.withUnsafeBytes { Array($0) }
            try out.put(bytes: bytes)
        case kAudioConverterPropertyCalculateInputBufferSize, kAudioConverterPropertyCalculateOutputBufferSize:
            guard out.size.pointee == 4 else { throw AudioToolboxError(kAudioConverterErr_BadPropertySizeError, "the value is a UInt32") }
            guard let data = out.data else { throw AudioToolboxError(kAudio_ParamError, "NULL outPropertyData") }
            let bytes = Int(data.loadUnaligned(as: UInt32.self))
            let result = id == kAudioConverterPropertyCalculateInputBufferSize ? try inputBytes(forOutput: bytes) : try outputBytes(forInput: bytes)
            try out.put(UInt32(clamping: result))
        default:
            throw notSupported(id)
        }
    }

    /// Input bytes to fill `bytes` bytes of output (linear PCM input only).
    private func inputBytes(forOutput bytes: Int) throws -> Int {
        guard mode != .decode else { throw notSupported(kAudioConverterPropertyCalculateInputBufferSize) }
        var frames: Int
        if mode == .encode, let encoder {
            frames = bytes / max(maximumOutputPacketSize, 1) * encoder.framesPerPacket
        } else {
            frames = bytes / max(Int(output.mBytesPerFrame), 1)
        }
        if let rate { frames = Int((Double(frames) * rate.inputRate / rate.outputRate).rounded(.up)) }
        return frames * Int(input.mBytesPerFrame)
    }

    /// Output bytes that `bytes` bytes of input give (linear PCM to linear PCM only).
    private func outputBytes(forInput bytes: Int) throws -> Int {
        guard mode == .pcm else { throw notSupported(kAudioConverterPropertyCalculateOutputBufferSize) }
        var frames = bytes / max(Int(input.mBytesPerFrame), 1)
        if let rate { frames = Int((Double(frames) * rate.outputRate / rate.inputRate).rounded(.up)) }
        return frames * Int(output.mBytesPerFrame)
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
        case kAudioConverterPrimeMethod: return (4, rate != nil)
        case kAudioConverterCodecQuality where mode == .encode: return (4, true)
        case kAudioConverterSampleRateConverterQuality where rate != nil, kAudioConverterSampleRateConverterComplexity where rate != nil:
            return (4, true)
        case kAudioConverterChannelMap: return (UInt32(outputChannels * MemoryLayout<Int32>.size), true)
        case kAudioConverterPropertyCalculateInputBufferSize where mode != .decode,
             kAudioConverterPropertyCalculateOutputBufferSize where mode == .pcm:
            return (4, false)
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
        case kAudioConverterSampleRateConverterQuality where rate != nil, kAudioConverterSampleRateConverterComplexity where rate != nil,
             kAudioConverterPrimeMethod where rate != nil:
            let number = try value(data, size, as: UInt32.self, sizeError: kAudioConverterErr_BadPropertySizeError)
            try rate?.set(id, number, started: started)
        case kAudioConverterChannelMap:
            try routing.set(data, size)
        case kAudioConverterCodecQuality where mode == .encode:
            let quality = try value(data, size, as: UInt32.self, sizeError: kAudioConverterErr_BadPropertySizeError)
            guard quality <= kAudioConverterQuality_Max else { throw AudioToolboxError(kAudio_ParamError, "quality \(quality) (0...127)") }
            codecQuality = quality
        default:
            _ = try propertySize(id)
            throw AudioToolboxError(kAudioConverterErr_PropertyNotSupported, "property \(fourCharacterCode(id)) is read-only")
        }
    }

    func notSupported(_ id: AudioConverterPropertyID) -> AudioToolboxError {
        AudioToolboxError(kAudioConverterErr_PropertyNotSupported, "property \(fourCharacterCode(id))")
    }
}
