import Foundation
import Glibc
import Synchronization
import Testing
import AudioToolbox
@testable import AudioCodec
import QueueCore
import JackTestSupport
import RefereeTesting

/// Compressed queues through the public API on a ManualDriver: packets with descriptions
/// decoded by output queues, packets made by input queues, their cookies and errors.
/// One case at a time: each encodes or decodes as fast as a ManualDriver runs, and two
/// encoders sharing two cores starve the queue thread (an Opus take came back empty).
@Suite(.serialized, .refereeCrashesAreKnownIssues) struct AudioQueueCodecTests {
    // MARK: A packet player in the guide's style (Listing 3-x, the VBR branch)

    /// What the output callback reads packets from: the guide's AQPlayerState, with an array of
    /// packets for the file.
    final class PacketPlayer: @unchecked Sendable {
        let packets: [[UInt8]]
        let packetsPerBuffer: Int
        var trimFirst = 0
        var queue: AudioQueueRef?
        let next = Mutex(0)
        let done = Mutex(false)
        let statuses = Mutex<[OSStatus]>([])
        let converterErrors = Mutex<[UInt32]>([])
        let runningChanges = Mutex<[UInt32]>([])
        var first = true

        init(packets: [[UInt8]], packetsPerBuffer: Int) {
            self.packets = packets
            self.packetsPerBuffer = packetsPerBuffer
        }

        /// HandleOutputBuffer: reads the next packets and their descriptions into the buffer.
        func fill(_ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef) {
            let start = next.withLock { n -> Int in defer { n += packetsPerBuffer }; return n }
            guard start < packets.count else {
                if !done.withLock({ d in defer { d = true }; return d }) { AudioQueueStop(queue, false) }
                return
            }
            var offset = 0
            var count: UInt32 = 0
            let descriptions = buffer.pointee.mPacketDescriptions!
            for packet in packets[start..<min(packets.count, start + packetsPerBuffer)] {
                guard offset + packet.count <= Int(buffer.pointee.mAudioDataBytesCapacity) else { break }
                packet.withUnsafeBytes { (buffer.pointee.mAudioData + offset).copyMemory(from: $0.baseAddress!, byteCount: packet.count) }
                descriptions[Int(count)] = AudioStreamPacketDescription(mStartOffset: Int64(offset), mVariableFramesInPacket: 0,
                                                                        mDataByteSize: UInt32(packet.count))
                offset += packet.count
                count += 1
            }
            buffer.pointee.mAudioDataByteSize = UInt32(offset)
            buffer.pointee.mPacketDescriptionCount = count
            let status: OSStatus
            if first && trimFirst > 0 {
                // The encoder's priming, trimmed as Apple code trims it (kAudioFilePropertyPacketTableInfo).
                first = false
                status = AudioQueueEnqueueBufferWithParameters(queue, buffer, count, descriptions, UInt32(trimFirst), 0, 0, nil, nil, nil)
            } else {
                status = AudioQueueEnqueueBuffer(queue, buffer, count, descriptions)
            }
            if status != noErr { statuses.withLock { $0.append(status) } }
        }
    }

    static let playerCallback: AudioQueueOutputCallback = { user, queue, buffer in
        Unmanaged<PacketPlayer>.fromOpaque(user!).takeUnretainedValue().fill(queue, buffer)
    }

    static let converterErrorListener: AudioQueuePropertyListenerProc = { user, queue, id in
        var value: UInt32 = 0
        var size = UInt32(4)
        AudioQueueGetProperty(queue, id, &value, &size)
        Unmanaged<PacketPlayer>.fromOpaque(user!).takeUnretainedValue().converterErrors.withLock { $0.append(value) }
    }

    static let runningListener: AudioQueuePropertyListenerProc = { user, queue, id in
        var value: UInt32 = 0
        var size = UInt32(4)
        AudioQueueGetProperty(queue, id, &value, &size)
        Unmanaged<PacketPlayer>.fromOpaque(user!).takeUnretainedValue().runningChanges.withLock { $0.append(value) }
    }

    /// Plays `packets` through an output queue of `format` with `cookie`; returns what each port played.
    static func play(_ packets: [[UInt8]], format: AudioStreamBasicDescription, cookie: [UInt8], trim: Int = 0,
                     packetsPerBuffer: Int = 10, driver: ManualDriver) throws -> (played: [[Float]], player: PacketPlayer) {
        let player = PacketPlayer(packets: packets, packetsPerBuffer: packetsPerBuffer)
        player.trimFirst = trim
        var format = format
        var queue: AudioQueueRef?
        let user = Unmanaged.passUnretained(player).toOpaque()
        #expect(AudioQueueNewOutput(&format, playerCallback, user, nil, nil, 0, &queue, device: driver) == noErr)
        let q = try #require(queue)
        player.queue = q
        #expect(AudioQueueAddPropertyListener(q, kAudioQueueProperty_ConverterError, converterErrorListener, user) == noErr)
        #expect(AudioQueueAddPropertyListener(q, kAudioQueueProperty_IsRunning, runningListener, user) == noErr)
        if !cookie.isEmpty {
            #expect(AudioQueueSetProperty(q, kAudioQueueProperty_MagicCookie, cookie, UInt32(cookie.count)) == noErr)
        }
        // DeriveBufferSize: room for packetsPerBuffer of the largest packets.
        var maxPacket: UInt32 = 0
        var size = UInt32(4)
        #expect(AudioQueueGetProperty(q, kAudioQueueProperty_MaximumOutputPacketSize, &maxPacket, &size) == noErr)
        let bytes = max(maxPacket, UInt32(packets.map(\.count).max() ?? 0)) * UInt32(packetsPerBuffer)
        for _ in 0..<3 {
            var buffer: AudioQueueBufferRef?
            #expect(AudioQueueAllocateBufferWithPacketDescriptions(q, bytes, UInt32(packetsPerBuffer), &buffer) == noErr)
            player.fill(q, try #require(buffer))
        }
        driver.startRecordingPlayback()
        #expect(AudioQueueStart(q, nil) == noErr)
        // Until IsRunning has gone to 1 and back to 0 (polling IsRunning for 0 alone would end
        // early: it turns 1 only once the queue thread has seen the first frame played).
        var cycles = 0
        while cycles < 20000 {
            if player.done.withLock({ $0 }) && player.runningChanges.withLock({ $0 == [1, 0] }) { break }
            driver.run(cycles: 1)
            cycles += 1
        }
        #expect(player.runningChanges.withLock { $0 } == [1, 0])
        #expect(AudioQueueDispose(q, true) == noErr)
        let channels = Int(format.mChannelsPerFrame)
        return ((0..<channels).map { driver.recordedPlayback(port: $0).samples }, player)
    }

    // MARK: ADTS, what ffmpeg's command line writes and reads for raw AAC

    /// Runs a referee (ffmpeg) to completion; a crash is run again (`runReferee`).
    static func run(_ arguments: [String]) throws {
        let result = try runReferee(arguments, timeout: 120)
        guard result.status == 0 else { throw CodecError.failed("\(arguments.joined(separator: " ")) failed: \(result.error)") }
    }

    static func floats(_ path: String) throws -> [Float] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    static func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "jaq-codec-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func aacFormat(rate: Double = 48000, channels: UInt32 = 2) -> AudioStreamBasicDescription {
        AudioStreamBasicDescription(mSampleRate: rate, mFormatID: kAudioFormatMPEG4AAC, mFormatFlags: 0, mBytesPerPacket: 0,
                                    mFramesPerPacket: 1024, mBytesPerFrame: 0, mChannelsPerFrame: channels,
                                    mBitsPerChannel: 0, mReserved: 0)
    }

    // MARK: Playback

    /// ffmpeg's command line encodes AAC; an output queue plays its packets (VBR, with
    /// descriptions, the esds cookie set) and what it plays equals ffmpeg's own decode of the
    /// file, sample for sample, with the 1024 frames of priming trimmed.
    @Test func playsFFmpegsAACAsFFmpegDecodesIt() throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i",
                      "aevalsrc=0.3*sin(2*PI*440*t)+0.1*sin(2*PI*(100+2000*t)*t)|0.3*sin(2*PI*660*t):s=48000:d=3",
                      "-c:a", "aac", "-b:a", "128k", "-f", "adts", dir + "/take.aac"])
        try Self.run(["ffmpeg", "-v", "error", "-y", "-i", dir + "/take.aac", "-f", "f32le", "-c:a", "pcm_f32le", dir + "/ref.raw"])
        let adts = Array(try Data(contentsOf: URL(fileURLWithPath: dir + "/take.aac")))
        let (packets, asc) = ADTS.split(adts)
        let reference = try Self.floats(dir + "/ref.raw")
        let cookie = MagicCookie.esds(audioSpecificConfig: asc, averageBitRate: 128_000, bufferSize: 1536)
        let (played, player) = try Self.play(packets, format: Self.aacFormat(), cookie: cookie, trim: 1024,
                                             driver: ManualDriver(periodFrames: 256))
        #expect(player.statuses.withLock { $0 }.isEmpty)
        #expect(player.converterErrors.withLock { $0 }.isEmpty)
        let frames = reference.count / 2
        #expect(frames == packets.count * 1024)
        for c in 0..<2 {
            let expected = (1024..<frames).map { reference[$0 * 2 + c] }
            let start = try #require(played[c].firstIndex { $0 != 0 })
            #expect(start <= 1, "the first frame after the priming plays first")
            #expect(firstMismatch(Array(played[c][0..<min(played[c].count, expected.count)]), expected) == nil, "channel \(c)")
            #expect(played[c][expected.count...].allSatisfy { $0 == 0 }, "nothing after the last frame")
        }
    }

    /// A corrupt packet in the middle: ConverterError is set and its listener called, the
    /// packet plays as 1024 frames of silence, everything else plays as decoded.
    @Test func aCorruptPacketIsSilenceAndAConverterErrorAndThePlayContinues() throws {
        let rate = 48000.0
        let encoder = try PacketEncoder(format: CodecFormat(formatID: CompressedFormat.mpeg4AAC, sampleRate: rate, channelCount: 2),
                                        bitRate: 128_000)
        let source = (0..<2).map { c in (0..<48000).map { Float(0.3 * sin(2 * Double.pi * (440 + 220 * Double(c)) * Double($0) / rate)) } }
        let pointers = source.map { $0.withUnsafeBufferPointer { $0.baseAddress! } }
        try pointers.withUnsafeBufferPointer { try encoder.encode($0.baseAddress!, frames: 48000) }
        try encoder.finish()
        var packets: [[UInt8]] = []
        while let p = encoder.nextPacket() { packets.append(p.bytes) }
        var broken = packets
        broken[20] = [UInt8](repeating: 0xFF, count: broken[20].count)   // garbage where packet 20 was
        let (clean, _) = try Self.play(packets, format: Self.aacFormat(), cookie: encoder.cookie, driver: ManualDriver())
        let (played, player) = try Self.play(broken, format: Self.aacFormat(), cookie: encoder.cookie, driver: ManualDriver())
        let errors = player.converterErrors.withLock { $0 }
        #expect(!errors.isEmpty && errors.allSatisfy { $0 != 0 }, "ConverterError is reported: \(errors)")
        #expect(player.statuses.withLock { $0 }.isEmpty)
        let total = packets.count * 1024
        #expect(played[0].count >= total)
        #expect(played[0][(20 * 1024)..<(21 * 1024)].allSatisfy { $0 == 0 }, "the bad packet is silence")
        #expect(firstMismatch(Array(played[0][0..<(20 * 1024)]), Array(clean[0][0..<(20 * 1024)])) == nil,
                "what came before plays as decoded")
        // The decoder recovers: it starts over after the bad packet, so from the packet after
        // the next (whose overlap needs a predecessor) everything plays as in the clean run, to
        // within -100 dB (the decoder's noise-substitution generator restarts too).
        let worst = (22 * 1024..<total).map { abs(played[0][$0] - clean[0][$0]) }.max() ?? 1
        #expect(worst < 1e-5, "after the bad packet the output differs by up to \(worst)")
    }

    @Test func formatsWithoutACodecAreRefusedWithTheReferenceCodes() throws {
        let device = ManualDriver()
        var queue: AudioQueueRef?
        var unknown = Self.aacFormat()
        unknown.mFormatID = 0x7A7A_7A7A  // 'zzzz'
        #expect(AudioQueueNewOutput(&unknown, Self.playerCallback, nil, nil, nil, 0, &queue, device: device) == kAudioFormatUnsupportedDataFormatError)
        #expect(queue == nil)
        // MP3 decodes, but no queue here encodes it: CodecNotFound for an input queue.
        var mp3 = Self.aacFormat()
        mp3.mFormatID = kAudioFormatMPEGLayer3
        mp3.mFramesPerPacket = 1152
        #expect(AudioQueueNewInput(&mp3, handleInputBuffer, nil, nil, nil, 0, &queue, device: device) == kAudioQueueErr_CodecNotFound)
        #expect(AudioQueueNewOutput(&mp3, Self.playerCallback, nil, nil, nil, 0, &queue, device: device) == noErr)
        let q = try #require(queue)
        // A VBR buffer with no descriptions is refused; a bad cookie too.
        var buffer: AudioQueueBufferRef?
        #expect(AudioQueueAllocateBufferWithPacketDescriptions(q, 4096, 4, &buffer) == noErr)
        let b = try #require(buffer)
        b.pointee.mAudioDataByteSize = 100
        #expect(AudioQueueEnqueueBuffer(q, b, 0, nil) == kAudio_ParamError)
        var outside = AudioStreamPacketDescription(mStartOffset: 90, mVariableFramesInPacket: 0, mDataByteSize: 20)
        #expect(AudioQueueEnqueueBuffer(q, b, 1, &outside) == kAudio_ParamError)
        var policy: UInt32 = 99
        var size = UInt32(4)
        #expect(AudioQueueGetProperty(q, kAudioQueueProperty_HardwareCodecPolicy, &policy, &size) == noErr)
        #expect(policy == kAudioQueueHardwareCodecPolicy_Default)
        #expect(AudioQueueDispose(q, true) == noErr)
        var alac = Self.aacFormat()
        alac.mFormatID = kAudioFormatAppleLossless
        alac.mFramesPerPacket = 4096
        #expect(AudioQueueNewOutput(&alac, Self.playerCallback, nil, nil, nil, 0, &queue, device: device) == noErr)
        let a = try #require(queue)
        let junk: [UInt8] = [1, 2, 3]
        #expect(AudioQueueSetProperty(a, kAudioQueueProperty_MagicCookie, junk, 3) == kAudioQueueErr_InvalidPropertyValue)
        #expect(AudioQueueDispose(a, true) == noErr)
    }

    /// kAudioQueueHardwareCodecPolicy_UseHardwareOnly: "if the designated codec implementation
    /// is not available, ... AudioQueuePrime or AudioQueueStart will fail". There are no
    /// hardware codecs here: an AAC queue fails both with kAudioQueueErr_InvalidCodecAccess
    /// (-66672); the same queue preferring hardware falls back to software and starts; a
    /// linear PCM queue needs no codec and starts whatever the policy.
    @Test func useHardwareOnlyFailsPrimeAndStartOfAQueueThatNeedsACodec() throws {
        let device = ManualDriver()
        var queue: AudioQueueRef?
        var aac = Self.aacFormat()
        #expect(AudioQueueNewOutput(&aac, Self.playerCallback, nil, nil, nil, 0, &queue, device: device) == noErr)
        let q = try #require(queue)
        var policy = UInt32(kAudioQueueHardwareCodecPolicy_UseHardwareOnly)
        #expect(AudioQueueSetProperty(q, kAudioQueueProperty_HardwareCodecPolicy, &policy, 4) == noErr)
        var prepared: UInt32 = 0
        #expect(AudioQueuePrime(q, 0, &prepared) == kAudioQueueErr_InvalidCodecAccess)
        #expect(AudioQueueStart(q, nil) == kAudioQueueErr_InvalidCodecAccess)
        var running: UInt32 = 1
        var size = UInt32(4)
        #expect(AudioQueueGetProperty(q, kAudioQueueProperty_IsRunning, &running, &size) == noErr && running == 0)
        policy = UInt32(kAudioQueueHardwareCodecPolicy_PreferHardware)
        #expect(AudioQueueSetProperty(q, kAudioQueueProperty_HardwareCodecPolicy, &policy, 4) == noErr)
        #expect(AudioQueueStart(q, nil) == noErr)
        #expect(AudioQueueDispose(q, true) == noErr)

        var pcm = AudioStreamBasicDescription(mSampleRate: 48000, mFormatID: kAudioFormatLinearPCM,
                                              mFormatFlags: kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked,
                                              mBytesPerPacket: 4, mFramesPerPacket: 1, mBytesPerFrame: 4, mChannelsPerFrame: 2,
                                              mBitsPerChannel: 16, mReserved: 0)
        #expect(AudioQueueNewOutput(&pcm, Self.playerCallback, nil, nil, nil, 0, &queue, device: device) == noErr)
        let p = try #require(queue)
        policy = UInt32(kAudioQueueHardwareCodecPolicy_UseHardwareOnly)
        #expect(AudioQueueSetProperty(p, kAudioQueueProperty_HardwareCodecPolicy, &policy, 4) == noErr)
        #expect(AudioQueueStart(p, nil) == noErr)
        #expect(AudioQueueDispose(p, true) == noErr)
    }

    // MARK: Recording

    /// What the input callback collects: packets, their descriptions, start times.
    final class PacketRecorder: @unchecked Sendable {
        let packets = Mutex<[[UInt8]]>([])
        let frames = Mutex<[UInt32]>([])
        let starts = Mutex<[Double]>([])
        /// Packets of each buffer, in the order of `starts`.
        let bufferPackets = Mutex<[Int]>([])
        let missingDescriptions = Mutex(0)
        /// kAudioQueueProperty_RecordUnderrun once the recording stopped.
        let underrun = Mutex<(events: UInt32, framesLost: UInt64, lastLoss: Double)>((0, 0, 0))
    }

    static let recorderCallback: AudioQueueInputCallback = { user, queue, buffer, start, count, descriptions in
        let recorder = Unmanaged<PacketRecorder>.fromOpaque(user!).takeUnretainedValue()
        if count > 0 {
            guard let descriptions else {
                recorder.missingDescriptions.withLock { $0 += 1 }
                return
            }
            recorder.starts.withLock { $0.append(start.pointee.mSampleTime) }
            recorder.bufferPackets.withLock { $0.append(Int(count)) }
            for d in UnsafeBufferPointer(start: descriptions, count: Int(count)) {
                let bytes = UnsafeRawBufferPointer(start: buffer.pointee.mAudioData + Int(d.mStartOffset), count: Int(d.mDataByteSize))
                recorder.packets.withLock { $0.append(Array(bytes)) }
                recorder.frames.withLock { $0.append(d.mVariableFramesInPacket) }
            }
        }
        AudioQueueEnqueueBuffer(queue, buffer, 0, nil)
    }

    /// Records `seconds` of the driver's capture signal in `format`; returns the packets, the
    /// queue's magic cookie, and its complete format.
    static func record(format: AudioStreamBasicDescription, driver: ManualDriver, cycles: Int, bitRate: UInt32? = nil,
                       drive: ((ManualDriver) -> Void)? = nil) throws
        -> (packets: [[UInt8]], cookie: [UInt8], format: AudioStreamBasicDescription, recorder: PacketRecorder) {
        let recorder = PacketRecorder()
        var format = format
        var queue: AudioQueueRef?
        #expect(AudioQueueNewInput(&format, recorderCallback, Unmanaged.passUnretained(recorder).toOpaque(), nil, nil, 0, &queue, device: driver) == noErr)
        let q = try #require(queue)
        if var bitRate {
            #expect(AudioQueueSetProperty(q, kAudioQueueProperty_EncoderBitRate, &bitRate, 4) == noErr)
            var read: UInt32 = 0
            var size = UInt32(4)
            #expect(AudioQueueGetProperty(q, kAudioQueueProperty_EncoderBitRate, &read, &size) == noErr && read == bitRate)
        }
        // The guide's recorder: the complete format, DeriveBufferSize from the largest packet, the cookie.
        var complete = AudioStreamBasicDescription()
        var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        #expect(AudioQueueGetProperty(q, kAudioQueueProperty_StreamDescription, &complete, &size) == noErr)
        // The guide's alternative on Mac OS X v10.5 answers the same complete format.
        var viaConverter = AudioStreamBasicDescription()
        var converterSize: UInt32 = 0
        #expect(AudioQueueGetPropertySize(q, kAudioConverterCurrentInputStreamDescription, &converterSize) == noErr)
        #expect(converterSize == UInt32(MemoryLayout<AudioStreamBasicDescription>.size))
        #expect(AudioQueueGetProperty(q, kAudioConverterCurrentInputStreamDescription, &viaConverter, &converterSize) == noErr)
        let same = withUnsafeBytes(of: viaConverter) { a in withUnsafeBytes(of: complete) { b in a.elementsEqual(b) } }
        #expect(same && viaConverter.mFramesPerPacket > 0, "\(viaConverter) against \(complete)")
        var maxPacket: UInt32 = 0
        size = 4
        #expect(AudioQueueGetProperty(q, kAudioQueueProperty_MaximumOutputPacketSize, &maxPacket, &size) == noErr)
        #expect(maxPacket > 0)
        for _ in 0..<3 {
            var buffer: AudioQueueBufferRef?
            #expect(AudioQueueAllocateBuffer(q, maxPacket * 8, &buffer) == noErr)
            #expect(AudioQueueEnqueueBuffer(q, try #require(buffer), 0, nil) == noErr)
        }
        #expect(AudioQueueStart(q, nil) == noErr)
        if let drive { drive(driver) } else { driver.run(cycles: cycles) }
        // IsRunning goes to 1 once the queue thread has seen the start (the cycles above started
        // the queue): wait for it, or the wait for 0 below could end before the queue began.
        #expect(waitUntil(30) {
            var running: UInt32 = 0
            var size = UInt32(4)
            AudioQueueGetProperty(q, kAudioQueueProperty_IsRunning, &running, &size)
            return running == 1
        })
        #expect(AudioQueueStop(q, false) == noErr)
        // Stop(false) delivers everything captured, the encoder's last packets included, then IsRunning goes to 0.
        // (Encoding the second recorded here takes the queue thread a while on a loaded 2-core machine
        // in a debug build; a short wait would dispose of the queue before it delivered everything.)
        #expect(waitUntil(120) {
            var running: UInt32 = 1
            var size = UInt32(4)
            AudioQueueGetProperty(q, kAudioQueueProperty_IsRunning, &running, &size)
            return running == 0
        })
        var converterError: UInt32 = 0
        size = 4
        #expect(AudioQueueGetProperty(q, kAudioQueueProperty_ConverterError, &converterError, &size) == noErr)
        #expect(converterError == 0)
        var underrun = AudioQueueRecordUnderrunInfo()
        size = UInt32(MemoryLayout<AudioQueueRecordUnderrunInfo>.size)
        #expect(AudioQueueGetProperty(q, kAudioQueueProperty_RecordUnderrun, &underrun, &size) == noErr)
        recorder.underrun.withLock { $0 = (underrun.mEventCount, underrun.mFramesLost, underrun.mLastLossSampleTime) }
        var cookieSize: UInt32 = 0
        #expect(AudioQueueGetPropertySize(q, kAudioQueueProperty_MagicCookie, &cookieSize) == noErr)
        var cookie = [UInt8](repeating: 0, count: Int(cookieSize))
        #expect(AudioQueueGetProperty(q, kAudioQueueProperty_MagicCookie, &cookie, &cookieSize) == noErr)
        #expect(AudioQueueDispose(q, true) == noErr)
        return (recorder.packets.withLock { $0 }, cookie, complete, recorder)
    }

    /// What a buffer brought to the input callback: the callback's packet count and the
    /// buffer's own mPacketDescriptionCount.
    final class DeliveryLog: @unchecked Sendable {
        let deliveries = Mutex<[(count: UInt32, inBuffer: UInt32)]>([])
    }

    static let deliveryCallback: AudioQueueInputCallback = { user, queue, buffer, _, count, _ in
        let log = Unmanaged<DeliveryLog>.fromOpaque(user!).takeUnretainedValue()
        log.deliveries.withLock { $0.append((count, buffer.pointee.mPacketDescriptionCount)) }
        AudioQueueEnqueueBuffer(queue, buffer, 0, nil)
    }

    /// A recording buffer allocated with N packet descriptions comes back once it holds N
    /// packets, with all N in its own mPacketDescriptions, whatever room its bytes have left.
    /// Silence encodes to 6-byte AAC packets: a buffer sized for 24 of the largest packets
    /// held minutes of it (jaq record's .m4a take of a source that left did not end).
    @Test func aBufferComesBackWhenItsPacketDescriptionsAreFull() throws {
        let driver = ManualDriver(periodFrames: 256)
        driver.setCaptureSignal { _, _ in 0 }
        let log = DeliveryLog()
        var format = Self.aacFormat()
        var queue: AudioQueueRef?
        #expect(AudioQueueNewInput(&format, Self.deliveryCallback, Unmanaged.passUnretained(log).toOpaque(), nil, nil, 0, &queue,
                                   device: driver) == noErr)
        let q = try #require(queue)
        defer { AudioQueueDispose(q, true) }
        var maxPacket: UInt32 = 0
        var size = UInt32(4)
        #expect(AudioQueueGetProperty(q, kAudioQueueProperty_MaximumOutputPacketSize, &maxPacket, &size) == noErr)
        let capacity: UInt32 = 24  // half a second of AAC packets at 48 kHz, as jaq record sizes them
        for _ in 0..<3 {
            var buffer: AudioQueueBufferRef?
            #expect(AudioQueueAllocateBufferWithPacketDescriptions(q, maxPacket * capacity, capacity, &buffer) == noErr)
            #expect(AudioQueueEnqueueBuffer(q, try #require(buffer), 0, nil) == noErr)
        }
        #expect(AudioQueueStart(q, nil) == noErr)
        driver.run(cycles: 48000 / 256)  // a second: 47 packets
        // While it records: the buffers of 24 packets come back (before, none did until Stop).
        #expect(waitUntil(10) { log.deliveries.withLock { $0.count } >= 1 }, "a full buffer came back while recording")
        #expect(AudioQueueStop(q, false) == noErr)
        #expect(waitUntil(60) {
            var running: UInt32 = 1
            var size = UInt32(4)
            AudioQueueGetProperty(q, kAudioQueueProperty_IsRunning, &running, &size)
            return running == 0
        })
        let deliveries = log.deliveries.withLock { $0 }
        #expect(deliveries.allSatisfy { $0.count <= capacity && $0.inBuffer == $0.count }, "\(deliveries)")
        #expect(deliveries.first?.count == capacity, "\(deliveries)")
        let packets: Int = deliveries.reduce(0) { $0 + Int($1.count) }
        let recorded = 48000 / 256 * 256
        #expect(packets * 1024 >= recorded, "every frame recorded is in a packet")
    }

    static func losslessFormat(_ id: AudioFormatID, bits: Int) -> AudioStreamBasicDescription {
        AudioStreamBasicDescription(mSampleRate: 48000, mFormatID: id, mFormatFlags: CompressedFormat.losslessFlags(bits: bits),
                                    mBytesPerPacket: 0, mFramesPerPacket: 0, mBytesPerFrame: 0, mChannelsPerFrame: 2,
                                    mBitsPerChannel: 0, mReserved: 0)
    }

    /// ALAC and FLAC recorded by an input queue and played by an output queue with the
    /// recording's cookie come back bit-exact (16- and 24-bit sources).
    @Test(arguments: [(kAudioFormatAppleLossless, 16), (kAudioFormatAppleLossless, 24), (kAudioFormatFLAC, 16), (kAudioFormatFLAC, 24)])
    func losslessRecordingsPlayBackBitExact(id: AudioFormatID, bits: Int) throws {
        let full = Float(1 << (bits - 1))
        let value: @Sendable (Int, Int64) -> Float = { port, frame in
            let x = (frame &* 7919 &+ Int64(port) &* 104_729) % 60_000 - 30_000
            return (Float(x) * (bits == 24 ? 256 : 1)).rounded() / full
        }
        let recordDriver = ManualDriver(periodFrames: 256)
        recordDriver.setCaptureSignal(value)
        let cycles = 48000 / 256
        let (packets, cookie, format, recorder) = try Self.record(format: Self.losslessFormat(id, bits: bits), driver: recordDriver,
                                                                  cycles: cycles)
        #expect(format.mFramesPerPacket == 4096)
        #expect(!cookie.isEmpty)
        #expect(recorder.missingDescriptions.withLock { $0 } == 0)
        let frames = recorder.frames.withLock { $0 }
        let total = frames.reduce(0) { $0 + ($1 == 0 ? 4096 : Int($1)) }
        #expect(total == cycles * 256, "every frame recorded is in a packet")
        let (played, player) = try Self.play(packets, format: format, cookie: cookie, packetsPerBuffer: 4, driver: ManualDriver())
        #expect(player.converterErrors.withLock { $0 }.isEmpty)
        #expect(player.statuses.withLock { $0 }.isEmpty)
        for c in 0..<2 {
            let expected = (0..<total).map { value(c, Int64($0)) }
            #expect(firstMismatch(Array(played[c].prefix(total)), expected) == nil, "channel \(c)")
        }
    }

    /// Cycles the server skipped while an ALAC queue records: the loss is reported
    /// (RecordUnderrun, its frames and queue time) and the encoded stream holds silence for
    /// exactly those frames, so decoding it gives the source with that span silent and every
    /// frame after it on its own frame, bit-exact.
    @Test func framesTheCaptureLostAreEncodedAsSilenceAndTheRestStaysAligned() throws {
        let value: @Sendable (Int, Int64) -> Float = { port, frame in
            let x = (frame &* 7919 &+ Int64(port) &* 104_729) % 60_000 - 30_000
            return Float(x == 0 ? 1 : x) / 32768  // never 0: silence in the decode is only the loss
        }
        let driver = ManualDriver(periodFrames: 256)
        driver.setCaptureSignal(value)
        let (before, skipped, after) = (30, 3, 40)
        let (packets, cookie, format, recorder) = try Self.record(
            format: Self.losslessFormat(kAudioFormatAppleLossless, bits: 16), driver: driver, cycles: 0,
            drive: { driver in
                driver.run(cycles: before)
                driver.skip(cycles: skipped)
                driver.run(cycles: after)
            })
        let lostFrames = skipped * 256
        let lossStart = before * 256
        let underrun = recorder.underrun.withLock { $0 }
        #expect(underrun.events == 1)
        #expect(underrun.framesLost == UInt64(lostFrames))
        #expect(underrun.lastLoss == Double(lossStart))
        let packetFrames = recorder.frames.withLock { $0 }.map { $0 == 0 ? 4096 : Int($0) }
        let total = packetFrames.reduce(0, +)
        #expect(total == (before + skipped + after) * 256, "the stream holds the lost frames too")
        // Each buffer's start time is its first packet's place in the stream.
        var streamFrame = 0
        var packetIndex = 0
        for (start, count) in zip(recorder.starts.withLock { $0 }, recorder.bufferPackets.withLock { $0 }) {
            #expect(start == Double(streamFrame), "buffer at packet \(packetIndex)")
            streamFrame += packetFrames[packetIndex..<(packetIndex + count)].reduce(0, +)
            packetIndex += count
        }
        #expect(packetIndex == packetFrames.count)
        let (played, player) = try Self.play(packets, format: format, cookie: cookie, packetsPerBuffer: 4, driver: ManualDriver())
        #expect(player.converterErrors.withLock { $0 }.isEmpty)
        for c in 0..<2 {
            let expected = (0..<total).map { t in
                (lossStart..<(lossStart + lostFrames)).contains(t) ? 0 : value(c, Int64(t))
            }
            #expect(firstMismatch(Array(played[c].prefix(total)), expected) == nil, "channel \(c)")
        }
    }

    /// The guide's recorder set to AAC: 128 kbit/s stereo packets that ffmpeg reads; with the
    /// priming removed the decoded signal is the source within 30 dB SNR and exactly as long.
    @Test func aacRecordingIsReadByFFmpegWithinThirtyDecibels() throws {
        _ = try Self.recordAAC(bitRate: nil)
    }

    /// kAudioQueueProperty_EncoderBitRate: stereo noise recorded at 96 and 192 kbit/s comes out
    /// within 10 % of each rate (tones need fewer bits than the budget), and tones recorded at
    /// 192 kbit/s decode within 30 dB.
    @Test func aacRecordingAtASetBitRateHasThatRate() throws {
        _ = try Self.recordAAC(bitRate: 192_000)
        let noise: @Sendable (Int, Int64) -> Float = { port, frame in
            var x = UInt64(bitPattern: frame) &* 0x9E37_79B9_7F4A_7C15 &+ UInt64(port + 1) &* 0xBF58_476D_1CE4_E5B9
            x ^= x >> 31
            x = x &* 0x94D0_49BB_1331_11EB
            x ^= x >> 29
            return Float(Double(x >> 11) / Double(1 << 53) - 0.5) * 0.4
        }
        for target in [UInt32(96_000), 192_000] {
            let driver = ManualDriver(periodFrames: 256)
            driver.setCaptureSignal(noise)
            var asbd = Self.aacFormat()
            asbd.mFramesPerPacket = 0
            let (packets, _, _, _) = try Self.record(format: asbd, driver: driver, cycles: 2 * 48000 / 256, bitRate: target)
            let rate = Double(packets.reduce(0) { $0 + $1.count } * 8) / (Double(packets.count * 1024) / 48000)
            print("AAC noise recording at \(target) bit/s: \(Int(rate)) bit/s measured")
            #expect(abs(rate - Double(target)) < Double(target) * 0.1, "\(rate) bit/s for \(target)")
        }
    }

    /// The bit rate is refused with Apple's codes where it cannot apply: out of the codec's
    /// range, a lossless format, a playback queue, a running queue.
    @Test func encoderBitRateIsRefusedWhereItCannotApply() throws {
        let device = ManualDriver()
        var queue: AudioQueueRef?
        var aac = Self.aacFormat()
        #expect(AudioQueueNewInput(&aac, handleInputBuffer, nil, nil, nil, 0, &queue, device: device) == noErr)
        let q = try #require(queue)
        var rate: UInt32 = 1000
        #expect(AudioQueueSetProperty(q, kAudioQueueProperty_EncoderBitRate, &rate, 4) == kAudioQueueErr_InvalidPropertyValue)
        rate = 2_000_000
        #expect(AudioQueueSetProperty(q, kAudioQueueProperty_EncoderBitRate, &rate, 4) == kAudioQueueErr_InvalidPropertyValue)
        var read: UInt32 = 0
        var size = UInt32(4)
        #expect(AudioQueueGetProperty(q, kAudioQueueProperty_EncoderBitRate, &read, &size) == noErr && read == 128_000)
        #expect(AudioQueueStart(q, nil) == noErr)
        rate = 96_000
        #expect(AudioQueueSetProperty(q, kAudioQueueProperty_EncoderBitRate, &rate, 4) == kAudioQueueErr_InvalidRunState)
        #expect(AudioQueueDispose(q, true) == noErr)

        var alac = Self.losslessFormat(kAudioFormatAppleLossless, bits: 16)
        #expect(AudioQueueNewInput(&alac, handleInputBuffer, nil, nil, nil, 0, &queue, device: device) == noErr)
        let lossless = try #require(queue)
        #expect(AudioQueueSetProperty(lossless, kAudioQueueProperty_EncoderBitRate, &rate, 4) == kAudioQueueErr_InvalidPropertyValue)
        #expect(AudioQueueGetProperty(lossless, kAudioQueueProperty_EncoderBitRate, &read, &size) == noErr && read == 0)
        #expect(AudioQueueDispose(lossless, true) == noErr)

        var out = Self.aacFormat()
        #expect(AudioQueueNewOutput(&out, { _, _, _ in }, nil, nil, nil, 0, &queue, device: device) == noErr)
        let player = try #require(queue)
        #expect(AudioQueueSetProperty(player, kAudioQueueProperty_EncoderBitRate, &rate, 4) == kAudioQueueErr_InvalidQueueType)
        #expect(AudioQueueDispose(player, true) == noErr)
    }

    /// Records 2 s of two tones as AAC (at `bitRate`, else the default), checks ffmpeg decodes
    /// it within 30 dB after the priming, and returns the packets' bit rate.
    static func recordAAC(bitRate: UInt32?) throws -> Double {
        let rate = 48000.0
        let tone: @Sendable (Int, Int64) -> Float = { port, frame in
            let t = Double(frame) / rate
            let f = port == 0 ? 440.0 : 660.0
            return Float(0.2 * sin(2 * Double.pi * f * t) + 0.1 * sin(2 * Double.pi * 2500 * t))
        }
        let driver = ManualDriver(periodFrames: 256)
        driver.setCaptureSignal(tone)
        let cycles = 2 * 48000 / 256
        var asbd = Self.aacFormat()
        asbd.mFramesPerPacket = 0
        let (packets, cookie, format, recorder) = try Self.record(format: asbd, driver: driver, cycles: cycles, bitRate: bitRate)
        #expect(format.mFramesPerPacket == 1024)
        #expect(cookie.first == 0x03, "an ES descriptor")
        let asc = try MagicCookie.audioSpecificConfig(fromESDS: cookie)
        #expect(asc.prefix(2) == [0x11, 0x90], "AAC-LC, 48 kHz, stereo")
        #expect(recorder.starts.withLock { $0 }.first == 0)
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data(ADTS.join(packets)).write(to: URL(fileURLWithPath: dir + "/rec.aac"))
        try Self.run(["ffmpeg", "-v", "error", "-y", "-i", dir + "/rec.aac", "-f", "f32le", "-c:a", "pcm_f32le", dir + "/dec.raw"])
        let decoded = try Self.floats(dir + "/dec.raw")
        let priming = 1024
        let frames = cycles * 256
        // Whole packets: the priming, the frames, the last packet's padding.
        #expect(decoded.count / 2 == packets.count * 1024)
        #expect(decoded.count / 2 - priming >= frames && decoded.count / 2 - priming - frames < 1024,
                "\(decoded.count / 2 - priming) frames after the priming for \(frames)")
        for c in 0..<2 {
            var signal = 0.0, noise = 0.0
            for i in 0..<frames {
                let a = Double(tone(c, Int64(i)))
                let b = Double(decoded[(i + priming) * 2 + c])
                signal += a * a
                noise += (a - b) * (a - b)
            }
            let snr = 10 * log10(signal / noise)
            print("AAC recording at \(bitRate.map(String.init) ?? "the default") bit/s, channel \(c): SNR \(snr) dB")
            #expect(snr >= 30, "channel \(c): \(snr) dB")
        }
        let bytes = packets.reduce(0) { $0 + $1.count }
        let measured = Double(bytes * 8) / (Double(packets.count * 1024) / rate)
        print("AAC recording at \(bitRate.map(String.init) ?? "the default") bit/s: \(Int(measured)) bit/s measured")
        return measured
    }
}
