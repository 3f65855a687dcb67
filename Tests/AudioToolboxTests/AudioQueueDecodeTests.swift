import AudioCodec
import AudioToolbox
import Foundation
import QueueCore
import Testing

/// Decoders played through an output queue: files made by ffmpeg's command line, their packets
/// as libavformat lists them, played on a ManualDriver, equal ffmpeg's own decode of the file.
extension AudioQueueCodecTests {
    /// MP3 (libmp3lame) and Opus (libopus, in CAF, OpusHead as the cookie), VBR packets with
    /// descriptions, and IMA4 (CBR, in CAF): what the queue
    /// plays equals ffmpeg's decode from the frame ffmpeg's decode starts at (ffmpeg drops the
    /// MP3 encoder delay and Opus pre-skip its gapless header names; the queue plays every decoded frame), to
    /// float rounding.
    @Test(arguments: [
        (["-c:a", "libmp3lame", "-b:a", "192k"], "mp3", kAudioFormatMPEGLayer3, UInt32(1152), UInt32(0)),
        (["-c:a", "adpcm_ima_qt"], "caf", kAudioFormatAppleIMA4, UInt32(64), UInt32(68)),
        (["-c:a", "libopus", "-b:a", "128k"], "caf", kAudioFormatOpus, UInt32(960), UInt32(0)),
    ])
    func playsFFmpegsFileAsFFmpegDecodesIt(codec: [String], fileExtension: String, formatID: AudioFormatID,
                                           framesPerPacket: UInt32, bytesPerPacket: UInt32) throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/take." + fileExtension
        try Self.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i",
                      "aevalsrc=0.3*sin(2*PI*440*t)+0.1*sin(2*PI*(100+2000*t)*t)|0.3*sin(2*PI*660*t):s=48000:d=2"]
                     + codec + [path])
        try Self.run(["ffmpeg", "-v", "error", "-y", "-i", path, "-f", "f32le", "-c:a", "pcm_f32le", dir + "/ref.raw"])
        let reference = try Self.floats(dir + "/ref.raw")
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        let index = try MediaFileReader.index(path: path, fileByteCount: Int64(bytes.count))
        var packets: [[UInt8]] = []
        for p in index.packets {
            let data = Array(bytes[Int(p.position)..<Int(p.position) + p.byteCount])
            // CAF's demuxer reads CBR packets in blocks: one IMA4 packet a description.
            let size = bytesPerPacket > 0 ? Int(bytesPerPacket) : data.count
            packets += stride(from: 0, to: data.count, by: size).map { Array(data[$0..<min(data.count, $0 + size)]) }
        }
        #expect(packets.count > 20)
        let format = AudioStreamBasicDescription(
            mSampleRate: 48000, mFormatID: formatID, mFormatFlags: 0, mBytesPerPacket: bytesPerPacket,
            mFramesPerPacket: framesPerPacket, mBytesPerFrame: 0, mChannelsPerFrame: 2, mBitsPerChannel: 0, mReserved: 0)
        let (played, player) = try Self.play(packets, format: format, cookie: formatID == kAudioFormatOpus ? index.extradata : [], driver: ManualDriver(periodFrames: 256))
        #expect(player.statuses.withLock { $0 }.isEmpty)
        #expect(player.converterErrors.withLock { $0 }.isEmpty)
        let frames = reference.count / 2
        let decoded = packets.count * Int(framesPerPacket)
        #expect(decoded >= frames && decoded - frames < 4000, "\(decoded) frames decoded, ffmpeg's \(frames)")
        // Where ffmpeg's first frame is in what the queue played (the MP3 delay ffmpeg skips).
        let skip = (0..<4000).first { k in
            (0..<512).allSatisfy { i in k + 1000 + i < played[0].count && abs(played[0][k + 1000 + i] - reference[(1000 + i) * 2]) <= 1e-6 }
        }
        let offset = try #require(skip, "ffmpeg's decode is not in what the queue played")
        print("\(CompressedFormat.name(formatID)) in \(fileExtension): ffmpeg's decode starts \(offset) frames into the queue's")
        #expect(offset == Int(index.primingFrames), "the priming the file names: \(index.primingFrames)")
        for c in 0..<2 {
            let count = min(frames, played[c].count - offset)
            #expect(count >= frames - Int(framesPerPacket), "channel \(c): \(count) of \(frames) frames")
            let bad = (0..<count).first { abs(played[c][offset + $0] - reference[$0 * 2 + c]) > 1e-6 }
            #expect(bad == nil, "channel \(c): frame \(bad ?? -1) differs from ffmpeg's decode")
        }
    }
}

extension AudioQueueCodecTests {
    /// Opus and IMA4 recorded through an input queue (two tones on a ManualDriver) and played
    /// back through an output queue with the recording's cookie: the tones come back at the SNR
    /// the codec allows (measured ~44-46 dB for Opus at its default 96 kbit/s stereo, 47/43 dB for IMA4; 35 dB required).
    @Test(arguments: [(kAudioFormatOpus, 35.0), (kAudioFormatAppleIMA4, 35.0)])
    func lossyRecordingsPlayBackWithTheSignal(formatID: AudioFormatID, minimumSNR: Double) throws {
        let tone: @Sendable (Int, Int64) -> Float = { port, frame in
            let t = Double(frame) / 48000
            return Float(0.3 * sin(2 * Double.pi * (port == 0 ? 440.0 : 660.0) * t))
        }
        let driver = ManualDriver(periodFrames: 256)
        driver.setCaptureSignal(tone)
        let asbd = AudioStreamBasicDescription(
            mSampleRate: 48000, mFormatID: formatID, mFormatFlags: 0, mBytesPerPacket: 0, mFramesPerPacket: 0,
            mBytesPerFrame: 0, mChannelsPerFrame: 2, mBitsPerChannel: 0, mReserved: 0)
        let cycles = 48000 / 256
        let (packets, cookie, format, _) = try Self.record(format: asbd, driver: driver, cycles: cycles)
        #expect(!packets.isEmpty)
        let (played, player) = try Self.play(packets, format: format, cookie: cookie, driver: ManualDriver(periodFrames: 256))
        #expect(player.converterErrors.withLock { $0 }.isEmpty)
        let frames = cycles * 256
        for c in 0..<2 {
            // The encoder's priming (Opus' pre-skip) plays first: the lag under 2000 frames where
            // 512 frames fit the tone best, then the SNR over the middle of the second there.
            let lag = (0..<2000).filter { $0 + frames <= played[c].count }.min { a, b in
                func error(_ lag: Int) -> Float {
                    (4800..<5312).reduce(0) { sum, i in let d = played[c][lag + i] - tone(c, Int64(i)); return sum + d * d }
                }
                return error(a) < error(b)
            } ?? 0
            var signal = 0.0, noise = 0.0
            for i in 4800..<(frames - 4800) {
                let a = Double(tone(c, Int64(i)))
                let d = Double(played[c][lag + i]) - a
                signal += a * a
                noise += d * d
            }
            let best = 10 * log10(signal / max(noise, 1e-30))
            print("\(CompressedFormat.name(formatID)) recorded and played, channel \(c): SNR \(best) dB")
            #expect(best >= minimumSNR, "channel \(c): \(best) dB")
        }
    }
}

extension AudioQueueCodecTests {
    /// A short fixed-seed fuzz: each encodable format's packets, one in eight mangled (bits
    /// flipped, cut short, replaced by noise, grown), played through an output queue: the queue
    /// runs to the end (IsRunning 1 then 0), ConverterError is reported (AAC, Opus, FLAC), every
    /// sample is finite;
    /// and mangled magic cookies are accepted or refused with kAudioQueueErr_InvalidPropertyValue.
    @Test(arguments: [CompressedFormat.mpeg4AAC, CompressedFormat.opus, CompressedFormat.appleLossless,
                      CompressedFormat.flac, kAudioFormatAppleIMA4])
    func mangledPacketsAndCookiesNeverStopTheQueue(formatID: AudioFormatID) throws {
        var seed: UInt64 = 0x6A61_7131_3363 ^ UInt64(formatID)
        func random(_ bound: Int) -> Int {
            seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17
            return Int(seed % UInt64(max(bound, 1)))
        }
        let flags = formatID == CompressedFormat.appleLossless || formatID == CompressedFormat.flac ? CompressedFormat.losslessFlags(bits: 16) : 0
        let encoder = try PacketEncoder(format: CodecFormat(formatID: formatID, formatFlags: flags, sampleRate: 48000, channelCount: 2))
        let source = (0..<2).map { c in (0..<48000).map { Float(0.3 * sin(2 * Double.pi * (440 + 220 * Double(c)) * Double($0) / 48000)) } }
        let pointers = source.map { $0.withUnsafeBufferPointer { $0.baseAddress! } }
        try pointers.withUnsafeBufferPointer { try encoder.encode($0.baseAddress!, frames: 48000) }
        try encoder.finish()
        var packets: [[UInt8]] = []
        while let p = encoder.nextPacket() { packets.append(p.bytes) }
        let cbr = formatID == kAudioFormatAppleIMA4
        for i in packets.indices where random(8) == 0 {
            switch random(cbr ? 2 : 4) {
            case 0: for _ in 0...random(8) { packets[i][random(packets[i].count)] ^= UInt8(1 << random(8)) }
            case 1: packets[i] = (0..<packets[i].count).map { _ in UInt8(random(256)) }
            case 2: packets[i] = Array(packets[i].prefix(1 + random(packets[i].count)))
            default: packets[i] += (0..<random(64)).map { _ in UInt8(random(256)) }
            }
        }
        let format = AudioStreamBasicDescription(
            mSampleRate: 48000, mFormatID: formatID, mFormatFlags: flags, mBytesPerPacket: cbr ? 68 : 0,
            mFramesPerPacket: UInt32(encoder.framesPerPacket), mBytesPerFrame: 0, mChannelsPerFrame: 2, mBitsPerChannel: 0, mReserved: 0)
        let (played, player) = try Self.play(packets, format: format, cookie: encoder.cookie, driver: ManualDriver(periodFrames: 256))
        #expect(player.statuses.withLock { $0 }.isEmpty)
        #expect(played.allSatisfy { $0.allSatisfy(\.isFinite) })
        #expect(played[0].count >= 24000, "the queue played on: \(played[0].count) frames")
        // ALAC and IMA4 have no checksum or syntax that catches every mangling: their decoders may
        // play it as (wrong) audio. AAC, Opus and FLAC (CRC) report it.
        if !cbr && formatID != CompressedFormat.appleLossless {
            #expect(!player.converterErrors.withLock { $0 }.isEmpty, "ConverterError is reported")
        }
        let device = ManualDriver()
        var queueFormat = format
        var queue: AudioQueueRef?
        #expect(AudioQueueNewOutput(&queueFormat, Self.playerCallback, nil, nil, nil, 0, &queue, device: device) == noErr)
        let q = try #require(queue)
        for _ in 0..<50 {
            var cookie = encoder.cookie
            if cookie.isEmpty || random(3) == 0 { cookie = (0..<random(200)).map { _ in UInt8(random(256)) } }
            for _ in 0...random(6) where !cookie.isEmpty { cookie[random(cookie.count)] = UInt8(random(256)) }
            let status = AudioQueueSetProperty(q, kAudioQueueProperty_MagicCookie, cookie, UInt32(cookie.count))
            #expect(status == noErr || status == kAudioQueueErr_InvalidPropertyValue, "\(status)")
        }
        #expect(AudioQueueDispose(q, true) == noErr)
    }
}
