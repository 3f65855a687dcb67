import AudioCodec
import AudioToolbox
import Foundation
import SoundFile

/// Small files of every container jaq reads, written with jaq's own AudioFile writer: the
/// fuzzer's seeds.
enum SeedFiles {
    /// An ASBD of packed interleaved samples.
    static func format(rate: Double, channels: UInt32, bits: UInt32, float: Bool = false, bigEndian: Bool = false) -> AudioStreamBasicDescription {
        var flags: AudioFormatFlags = kAudioFormatFlagIsPacked | (float ? kAudioFormatFlagIsFloat : kAudioFormatFlagIsSignedInteger)
        if bigEndian { flags |= kAudioFormatFlagIsBigEndian }
        let bytes = channels * bits / 8
        return AudioStreamBasicDescription(
            mSampleRate: rate, mFormatID: kAudioFormatLinearPCM, mFormatFlags: flags, mBytesPerPacket: bytes,
            mFramesPerPacket: 1, mBytesPerFrame: bytes, mChannelsPerFrame: channels, mBitsPerChannel: bits, mReserved: 0)
    }

    static let kinds: [(name: String, type: AudioFileTypeID, format: AudioStreamBasicDescription, frames: Int)] = [
        ("seed.wav", kAudioFileWAVEType, format(rate: 44100, channels: 2, bits: 16), 300),
        ("seed-f32.wav", kAudioFileWAVEType, format(rate: 48000, channels: 1, bits: 32, float: true), 200),
        ("seed.aiff", kAudioFileAIFFType, format(rate: 44100, channels: 2, bits: 16, bigEndian: true), 300),
        ("seed.aifc", kAudioFileAIFCType, format(rate: 48000, channels: 2, bits: 32, float: true, bigEndian: true), 200),
        ("seed.caf", kAudioFileCAFType, format(rate: 48000, channels: 3, bits: 24), 200),
        ("seed.au", kAudioFileNextType, format(rate: 8000, channels: 1, bits: 16, bigEndian: true), 300),
        ("seed.w64", kAudioFileWave64Type, format(rate: 44100, channels: 1, bits: 16), 300),
        ("seed.rf64", kAudioFileRF64Type, format(rate: 44100, channels: 2, bits: 24), 200),
        ("seed.flac", kAudioFileFLACType, format(rate: 44100, channels: 2, bits: 16), 2000),
        ("seed.ogg", kAudioFileOggVorbisType, format(rate: 44100, channels: 1, bits: 32, float: true), 3000),
        ("seed.opus", kAudioFileOggOpusType, format(rate: 48000, channels: 1, bits: 32, float: true), 3000),
        ("seed.mp3", kAudioFileMP3Type, format(rate: 44100, channels: 1, bits: 16), 3000),
    ]

    /// Types and encodings AudioFileCreateWithURL does not write but AudioFileOpenURL reads:
    /// written with libsndfile directly (mono, 8 kHz, which every one of them takes). Not SD2:
    /// libsndfile writes its resource fork through virtual I/O as a file named "._" in the
    /// current directory, and while that file exists it no longer recognises MP3 files
    /// without an ID3 tag ("bad resource fork").
    static let libsndfileKinds: [(name: String, format: SoundFile.Format)] = [
        ("seed.voc", .init(.voc, .pcm16)), ("seed.nist", .init(.nist, .pcm16)), ("seed.ircam", .init(.ircam, .float)),
        ("seed.avr", .init(.avr, .pcm16)), ("seed.paf", .init(.paf, .pcm24)), ("seed.svx", .init(.svx, .pcm16)),
        ("seed.mat5", .init(.mat5, .double)), ("seed.mat4", .init(.mat4, .double)),
        ("seed-ima.wav", .init(.wav, .imaADPCM)), ("seed-ms.wav", .init(.wav, .msADPCM)), ("seed-gsm.wav", .init(.wav, .gsm610)),
        ("seed-ulaw.w64", .init(.w64, .ulaw)), ("seed-alac.caf", .init(.caf, .alac16)), ("seed-dwvw.aiff", .init(.aiff, .dwvw16)),
        ("seed.xi", .init(.xi, .dpcm16)), ("seed.htk", .init(.htk, .pcm16)), ("seed.wve", .init(.wve, .alaw)),
        ("seed.mpc2k", .init(.mpc2k, .pcm16)), ("seed.sds", .init(.sds, .pcm16)), ("seed.pvf", .init(.pvf, .pcm16)),
        ("seed-u8.wav", .init(.wav, .pcmU8)), ("seed-alaw.aifc", .init(.aiff, .alaw)), ("seed-wavex.wav", .init(.wavex, .pcm24)),
    ]

    /// Files of compressed packets, encoded with AudioCodec's encoders and written with
    /// AudioFileWritePackets (cookie and packet table info set as the guide's recorder does).
    static let packetKinds: [(name: String, type: AudioFileTypeID, formatID: AudioFormatID, rate: Double, frames: Int)] = [
        ("seed-aac.m4a", kAudioFileM4AType, kAudioFormatMPEG4AAC, 44100, 5000),
        ("seed-alac.m4a", kAudioFileM4AType, kAudioFormatAppleLossless, 44100, 9000),
        ("seed-aac.caf", kAudioFileCAFType, kAudioFormatMPEG4AAC, 48000, 5000),
        ("seed-alac-packets.caf", kAudioFileCAFType, kAudioFormatAppleLossless, 48000, 9000),
        ("seed-ima4.caf", kAudioFileCAFType, kAudioFormatAppleIMA4, 22050, 2000),
        ("seed.aac", kAudioFileAAC_ADTSType, kAudioFormatMPEG4AAC, 32000, 5000),
    ]

    /// Encodes `frames` frames of sines and writes their packets into a new file.
    @discardableResult
    static func writePackets(_ path: String, type: AudioFileTypeID, formatID: AudioFormatID, rate: Double, channels: Int,
                             frames: Int) -> OSStatus {
        let flags: UInt32 = formatID == kAudioFormatAppleLossless ? 1 : 0  // 16-bit source
        guard let encoder = try? PacketEncoder(format: CodecFormat(formatID: formatID, formatFlags: flags, sampleRate: rate,
                                                                   channelCount: channels))
        else { return kAudioFormatUnsupportedDataFormatError }
        let planes = (0..<channels).map { channel in (0..<frames).map { Float(0.5 * sin(Double($0) * 0.05 * Double(channel + 1))) } }
        let pointers = planes.map { plane in plane.withUnsafeBufferPointer { UnsafePointer($0.baseAddress!) } }
        guard (try? pointers.withUnsafeBufferPointer { try encoder.encode($0.baseAddress!, frames: frames) }) != nil,
              (try? encoder.finish()) != nil
        else { return kAudioFormatUnsupportedDataFormatError }
        var format = AudioStreamBasicDescription(
            mSampleRate: rate, mFormatID: formatID, mFormatFlags: flags,
            mBytesPerPacket: UInt32(CompressedFormat.constantBytesPerPacket(formatID, channels: channels)),
            mFramesPerPacket: UInt32(encoder.framesPerPacket), mBytesPerFrame: 0, mChannelsPerFrame: UInt32(channels),
            mBitsPerChannel: 0, mReserved: 0)
        var file: AudioFileID?
        var status = AudioFileCreateWithURL(URL(fileURLWithPath: path), type, &format, .eraseFile, &file)
        guard status == noErr, let file else { return status }
        let cookie = encoder.cookie
        if !cookie.isEmpty { AudioFileSetProperty(file, kAudioFilePropertyMagicCookieData, UInt32(cookie.count), cookie) }
        var table = AudioFilePacketTableInfo(mNumberValidFrames: 0, mPrimingFrames: Int32(encoder.primingFrames), mRemainderFrames: 0)
        let tableSize = UInt32(MemoryLayout<AudioFilePacketTableInfo>.size)
        AudioFileSetProperty(file, kAudioFilePropertyPacketTableInfo, tableSize, &table)
        var packetCount: Int64 = 0
        var encodedFrames = 0
        while status == noErr, let packet = encoder.nextPacket() {
            var description = AudioStreamPacketDescription(mStartOffset: 0, mVariableFramesInPacket: 0, mDataByteSize: UInt32(packet.bytes.count))
            var count: UInt32 = 1
            status = AudioFileWritePackets(file, false, UInt32(packet.bytes.count), &description, packetCount, &count, packet.bytes)
            packetCount += 1
            encodedFrames += encoder.framesPerPacket
        }
        table.mNumberValidFrames = Int64(frames)
        table.mRemainderFrames = Int32(max(encodedFrames - frames - encoder.primingFrames, 0))
        AudioFileSetProperty(file, kAudioFilePropertyPacketTableInfo, tableSize, &table)
        let closed = AudioFileClose(file)
        return status == noErr ? closed : status
    }

    /// Writes each kind in `directory` and returns the bytes of those that could be written.
    static func make(in directory: String) -> [(name: String, bytes: [UInt8])] {
        let written = kinds.compactMap { kind -> (String, [UInt8])? in
            let path = "\(directory)/\(kind.name)"
            guard write(path, type: kind.type, format: kind.format, frames: kind.frames) == noErr else { return nil }
            return FileManager.default.contents(atPath: path).map { (kind.name, Array($0)) }
        }
        let packetFiles = packetKinds.compactMap { kind -> (String, [UInt8])? in
            let path = "\(directory)/\(kind.name)"
            guard writePackets(path, type: kind.type, formatID: kind.formatID, rate: kind.rate, channels: 2, frames: kind.frames) == noErr
            else { return nil }
            return FileManager.default.contents(atPath: path).map { (kind.name, Array($0)) }
        }
        let samples = (0..<400).map { Int16(8000 * sin(Double($0) * 0.07)) }
        return written + packetFiles + libsndfileKinds.compactMap { kind -> (String, [UInt8])? in
            let path = "\(directory)/\(kind.name)"
            let info = SoundFile.Info(sampleRate: 8000, channelCount: 1, format: kind.format)
            guard info.isWritable, let file = try? SoundFile(path: path, mode: .write, format: info) else { return nil }
            _ = samples.withUnsafeBufferPointer { file.writeFrames($0) }
            guard (try? file.close()) != nil else { return nil }
            return FileManager.default.contents(atPath: path).map { (kind.name, Array($0)) }
        }
    }

    /// Writes `frames` frames of a sine (or of `sample(frame, channel)`) into a new file.
    @discardableResult
    static func write(_ path: String, type: AudioFileTypeID, format: AudioStreamBasicDescription, frames: Int,
                      sample: (Int, Int) -> Double = { frame, channel in 0.5 * sin(Double(frame) * 0.05 * Double(channel + 1)) }) -> OSStatus {
        var format = format
        var file: AudioFileID?
        var status = AudioFileCreateWithURL(URL(fileURLWithPath: path), type, &format, .eraseFile, &file)
        guard status == noErr, let file else { return status }
        let channels = Int(format.mChannelsPerFrame)
        let width = Int(format.mBitsPerChannel / 8)
        let isFloat = format.mFormatFlags & kAudioFormatFlagIsFloat != 0
        let bigEndian = format.mFormatFlags & kAudioFormatFlagIsBigEndian != 0
        var bytes: [UInt8] = []
        for frame in 0..<frames {
            for channel in 0..<channels {
                let value = sample(frame, channel)
                var word: [UInt8]
                if isFloat {
                    word = withUnsafeBytes(of: Float(value).bitPattern.littleEndian) { Array($0) }
                } else {
                    let scaled = Int64((max(-1, min(1, value)) * Double((1 << (width * 8 - 1)) - 1)).rounded())
                    word = withUnsafeBytes(of: scaled.littleEndian) { Array($0.prefix(width)) }
                }
                if bigEndian { word.reverse() }
                bytes += word
            }
        }
        var packets = UInt32(frames)
        status = bytes.withUnsafeBytes { AudioFileWritePackets(file, false, UInt32($0.count), nil, 0, &packets, $0.baseAddress!) }
        let closed = AudioFileClose(file)
        return status == noErr ? closed : status
    }
}

/// NaN and ±inf samples written to the lossy encoders (libmp3lame, libvorbis, libopus), which
/// abort or write garbage on them. Prints, for each type, the result codes and whether what
/// reads back is finite and within ±1.
enum NonFiniteSamples {
    static func run(in directory: String) {
        let values: [Float] = [.nan, .infinity, -.infinity, -.nan, .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
                               .signalingNaN, 0.5]
        for (name, type, rate) in [("mp3", kAudioFileMP3Type, 44100.0), ("ogg", kAudioFileOggVorbisType, 44100.0),
                                   ("opus", kAudioFileOggOpusType, 48000.0)] {
            let path = "\(directory)/nonfinite.\(name)"
            let format = SeedFiles.format(rate: rate, channels: 2, bits: 32, float: true)
            // Every sample non-finite or huge for half a second, then a quiet sine.
            let written = SeedFiles.write(path, type: type, format: format, frames: Int(rate)) { frame, channel in
                frame < Int(rate) / 2 ? Double(values[(frame + channel) % values.count]) : 0.25 * sin(Double(frame) * 0.05)
            }
            var walk = FileWalk()
            walk.note("write", written)
            var file: AudioFileID?
            let opened = AudioFileOpenURL(URL(fileURLWithPath: path), .readPermission, 0, &file)
            walk.note("open", opened)
            if opened == noErr, let file {
                var peak: Float = 0
                var finite = true
                let frames = readSamples(file) { sample in
                    finite = finite && sample.isFinite
                    peak = max(peak, abs(sample))
                }
                walk.note("frames", String(frames))
                walk.note("finite", finite ? "yes" : "no")
                walk.note("peak", String(format: "%.3f", peak))
                AudioFileClose(file)
            }
            print("\(name): \(walk.line)")
            fflush(nil)
        }
    }

    /// Every sample of a stereo file, to `body`; returns the frames read. Ogg files read as
    /// Float32 PCM (libsndfile decodes); MP3 files as their '.mp3' packets, decoded here.
    private static func readSamples(_ file: AudioFileID, _ body: (Float) -> Void) -> Int64 {
        var format = AudioStreamBasicDescription()
        var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        guard AudioFileGetProperty(file, kAudioFilePropertyDataFormat, &size, &format) == noErr else { return 0 }
        if format.mFormatID == kAudioFormatLinearPCM {
            var samples = [Float](repeating: 0, count: 2 * 4096)
            var packet: Int64 = 0
            while true {
                var bytes = UInt32(samples.count * 4)
                var packets: UInt32 = 4096
                let status = AudioFileReadPacketData(file, false, &bytes, nil, packet, &packets, &samples)
                samples.prefix(Int(packets) * 2).forEach(body)
                packet += Int64(packets)
                if status != noErr || packets == 0 { return packet }
            }
        }
        guard let decoder = try? PacketDecoder(format: CodecFormat(formatID: format.mFormatID, sampleRate: format.mSampleRate, channelCount: 2,
                                                                   framesPerPacket: Int(format.mFramesPerPacket)), cookie: [])
        else { return 0 }
        var packetSize: UInt32 = 0
        size = 4
        AudioFileGetProperty(file, kAudioFilePropertyMaximumPacketSize, &size, &packetSize)
        var data = [UInt8](repeating: 0, count: Int(max(packetSize, 1)) * 64)
        var descriptions = [AudioStreamPacketDescription](repeating: .init(), count: 64)
        var packet: Int64 = 0
        var frames: Int64 = 0
        while true {
            var bytes = UInt32(data.count)
            var packets: UInt32 = 64
            let status = AudioFileReadPacketData(file, false, &bytes, &descriptions, packet, &packets, &data)
            for description in descriptions.prefix(Int(packets)) {
                let start = Int(description.mStartOffset)
                let decoded = data[start..<start + Int(description.mDataByteSize)].withUnsafeBytes { decoder.decodePacket($0).frames }
                for index in 0..<decoded { for channel in 0..<2 { body(decoder.planes[channel][index]) } }
                frames += Int64(decoded)
            }
            packet += Int64(packets)
            if status != noErr || packets == 0 { return frames }
        }
    }
}
