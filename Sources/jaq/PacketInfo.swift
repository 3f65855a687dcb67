import AudioCodec
import AudioToolbox
import QueueCore

/// What `jaq info` adds for files of compressed packets (AAC, ALAC... in .m4a, .caf, ADTS):
/// the packet count, the encoder's priming and the last packet's padding (the file's
/// PacketTableInfo), the bit rate, and peaks measured by decoding the packets.
struct PacketInfo: Encodable {
    let packets: UInt64
    let primingFrames: Int32
    let remainderFrames: Int32
    /// Frames of audio: the packets' frames less priming and remainder.
    let validFrames: Int64
    /// Bits per second, the file's average.
    let bitRate: UInt32
    let maximumPacketSize: UInt32

    /// The packet table of `file`, or nil for files of linear PCM (one frame a packet).
    init?(_ file: AudioFileID, format: AudioStreamBasicDescription) {
        guard format.mFormatID != kAudioFormatLinearPCM, format.mBytesPerFrame == 0 else { return nil }
        var table = AudioFilePacketTableInfo()
        var size = UInt32(MemoryLayout<AudioFilePacketTableInfo>.size)
        guard AudioFileGetProperty(file, kAudioFilePropertyPacketTableInfo, &size, &table) == noErr else { return nil }
        var packets: UInt64 = 0
        size = 8
        AudioFileGetProperty(file, kAudioFilePropertyAudioDataPacketCount, &size, &packets)
        var bitRate: UInt32 = 0
        var largest: UInt32 = 0
        size = 4
        AudioFileGetProperty(file, kAudioFilePropertyBitRate, &size, &bitRate)
        size = 4
        AudioFileGetProperty(file, kAudioFilePropertyMaximumPacketSize, &size, &largest)
        self.packets = packets
        primingFrames = table.mPrimingFrames
        remainderFrames = table.mRemainderFrames
        validFrames = table.mNumberValidFrames
        self.bitRate = bitRate
        maximumPacketSize = largest
    }

    /// The codec's name and what it says about itself: "AAC-LC, 128 kbit/s", "ALAC from 16-bit source".
    static func codecText(_ format: AudioStreamBasicDescription, bitRate: UInt32) -> String {
        let rate = bitRate > 0 ? ", \(Int((Double(bitRate) / 1000).rounded())) kbit/s" : ""
        switch format.mFormatID {
        case kAudioFormatMPEG4AAC: return "AAC-LC\(rate)"
        case kAudioFormatMPEG4AAC_HE: return "HE-AAC\(rate)"
        case kAudioFormatAppleLossless:
            let bits = AudioCodec.CompressedFormat.losslessBits(flags: format.mFormatFlags).map { " from \($0)-bit source" } ?? ""
            return "Apple Lossless (ALAC)\(bits)"
        case kAudioFormatMPEGLayer3: return "MP3\(rate)"
        case kAudioFormatFLAC: return "FLAC"
        case kAudioFormatOpus: return "Opus\(rate)"
        case kAudioFormatAppleIMA4: return "IMA4 ADPCM"
        default: return fourCharacterCode(format.mFormatID)
        }
    }

    /// The largest absolute sample per channel of the decoded audio, priming and padding left
    /// out (1.0 is full scale).
    func peaks(_ file: AudioFileID, format: AudioStreamBasicDescription) throws(InfoFailure) -> [Double] {
        var size: UInt32 = 0
        var cookie: [UInt8] = []
        if AudioFileGetPropertyInfo(file, kAudioFilePropertyMagicCookieData, &size, nil) == noErr, size > 0 {
            cookie = [UInt8](repeating: 0, count: Int(size))
            AudioFileGetProperty(file, kAudioFilePropertyMagicCookieData, &size, &cookie)
        }
        let channels = Int(format.mChannelsPerFrame)
        let decoder: PacketDecoder
        do {
            decoder = try PacketDecoder(format: CodecFormat(formatID: format.mFormatID, formatFlags: format.mFormatFlags,
                                                            sampleRate: format.mSampleRate, channelCount: channels,
                                                            framesPerPacket: Int(format.mFramesPerPacket),
                                                            bytesPerPacket: Int(format.mBytesPerPacket)),
                                        cookie: cookie)
        } catch {
            throw InfoFailure(kAudioFileUnsupportedDataFormatError, "cannot decode: \(error)")
        }
        var peaks = [Double](repeating: 0, count: channels)
        let batch = 64
        var buffer = [UInt8](repeating: 0, count: max(Int(maximumPacketSize), 1) * batch)
        var descriptions = [AudioStreamPacketDescription](repeating: .init(), count: batch)
        var packet: Int64 = 0
        var frame: Int64 = 0
        let end = Int64(primingFrames) + validFrames
        while packet < Int64(packets) {
            var bytes = UInt32(buffer.count)
            var count = UInt32(batch)
            let status = AudioFileReadPacketData(file, false, &bytes, &descriptions, packet, &count, &buffer)
            guard status == noErr || status == kAudioFileEndOfFileError, count > 0 else {
                throw InfoFailure(status, "cannot read packet \(packet)")
            }
            for description in descriptions.prefix(Int(count)) {
                let start = Int(description.mStartOffset)
                let decoded: Int
                do {
                    decoded = try buffer[start..<start + Int(description.mDataByteSize)].withUnsafeBytes { bytes throws(CodecError) in
                        try decoder.decode(bytes)
                    }
                } catch {
                    throw InfoFailure(kAudioFileInvalidFileError, "packet \(packet) does not decode: \(error)")
                }
                let planes = decoder.planes
                for index in 0..<decoded where frame + Int64(index) >= Int64(primingFrames) && frame + Int64(index) < end {
                    for channel in 0..<channels { peaks[channel] = max(peaks[channel], Double(abs(planes[channel][index]))) }
                }
                frame += Int64(decoded)
                packet += 1
            }
        }
        return peaks
    }
}
