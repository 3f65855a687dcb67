import AudioCodec
import CAudioToolbox
import QueueCore

// The properties of a queue that depend on its codec.

extension AudioQueueObject {
    /// kAudioQueueProperty_MagicCookie: an encoding queue's codec configuration (esds for AAC,
    /// ALACSpecificConfig, ...), or what was set on a decoding queue.
    var magicCookie: [UInt8] {
        if let cookie = encoder?.encoder?.cookie { return cookie }
        return state.withLock { $0.magicCookie }
    }

    /// Sets a decoding queue's cookie: checked by opening a decoder with it, then the queue
    /// thread decodes the next buffer with it. PCM queues store it (they need none).
    func setMagicCookie(_ bytes: [UInt8]) throws {
        if let output, output.isCompressed, let codec = codecFormat(format) {
            do {
                _ = try PacketDecoder(format: codec, cookie: bytes)
            } catch {
                throw AudioToolboxError(kAudioQueueErr_InvalidPropertyValue, "magic cookie: \(error)")
            }
            output.setMagicCookie(bytes)
        } else if encoder != nil {
            throw AudioToolboxError(kAudioQueueErr_InvalidPropertyValue, "an encoding queue makes its own magic cookie")
        }
        state.withLock { $0.magicCookie = bytes }
    }

    /// kAudioQueueProperty_EncoderBitRate: a lossy recording queue's bit rate, set while stopped.
    func setEncoderBitRate(_ rate: Int) throws {
        guard let encoder, encoder.hasBitRate else {
            throw AudioToolboxError(kAudioQueueErr_InvalidPropertyValue, "the queue's format has no bit rate to set")
        }
        guard engine.state == .stopped else { throw QueueError.invalidRunState("set the bit rate while stopped") }
        do {
            try encoder.setBitRate(rate)
        } catch {
            throw AudioToolboxError(kAudioQueueErr_InvalidPropertyValue, "bit rate: \(error)")
        }
    }

    /// kAudioQueueProperty_MaximumOutputPacketSize: the largest packet the queue's format
    /// makes (the encoder's bound), or a frame for linear PCM.
    var maximumPacketSize: Int {
        if let packetEncoder = encoder?.encoder { return packetEncoder.maximumPacketSize }
        if let codec = codecFormat(format) {
            if codec.bytesPerPacket > 0 { return codec.bytesPerPacket }
            let frames = Int(format.mFramesPerPacket)
            // The worst a decoder may be handed: 6144 bits a channel for AAC, the samples verbatim for lossless.
            switch codec.formatID {
            case kAudioFormatMPEG4AAC, kAudioFormatMPEG4AAC_HE, kAudioFormatMPEG4AAC_HE_V2: return 768 * codec.channelCount
            case kAudioFormatMPEGLayer3: return 1441 * 2
            case kAudioFormatOpus: return 1275 * 3 * codec.channelCount
            default: return frames * codec.channelCount * 4 + 64 * codec.channelCount + 64
            }
        }
        return Int(format.mBytesPerFrame)
    }
}
