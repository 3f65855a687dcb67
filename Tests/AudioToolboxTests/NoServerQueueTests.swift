import Testing
import Foundation
import Synchronization
import AudioToolbox
import JackDriver
import JackTestSupport
import QueueCore
import SoundFile

/// Playback queues with no JACK server running (issue #25, item 5): AudioQueueNewOutput
/// succeeds, the queue renders offline as on a Mac with no audio device, and a call that needs
/// the device returns kAudioQueueErr_InvalidDevice at once; a server that appears later is
/// connected to at the first call that needs it.
@Suite(.serialized) struct NoServerQueueTests {
    /// A JACK server name no jackd uses.
    static func absentServerName() -> String { "jaq-absent-\(getpid())-\(String(UInt32.random(in: 0...UInt32.max), radix: 16))" }

    /// A child's environment with no server: a server name no jackd uses, and libjack told not
    /// to start one.
    static var noServerEnvironment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["JACK_DEFAULT_SERVER"] = absentServerName()
        environment["JACK_NO_START_SERVER"] = "1"
        return environment
    }

    func status<T>(_ queue: AudioQueueRef, _ id: AudioQueuePropertyID, as: T.Type) -> (OSStatus, T?) {
        let value = UnsafeMutableRawPointer.allocate(byteCount: MemoryLayout<T>.size, alignment: 16)
        defer { value.deallocate() }
        var size = UInt32(MemoryLayout<T>.size)
        let result = AudioQueueGetProperty(queue, id, value, &size)
        return (result, result == noErr ? value.load(as: T.self) : nil)
    }

    @Test func withNoServerAPlaybackQueueIsMadeAndWhatNeedsTheDeviceIsInvalidDevice() throws {
        try JackServer.withExclusiveAccess {
            let device = JackDriver(serverName: Self.absentServerName())
            var format = lpcm(rate: 44100, channels: 2)
            var made: AudioQueueRef?
            let started = Date()
            #expect(AudioQueueNewOutput(&format, { _, _, _ in }, nil, nil, nil, 0, &made, device: device) == noErr)
            let queue = try #require(made)
            defer { AudioQueueDispose(queue, true) }
            var buffer: AudioQueueBufferRef?
            #expect(AudioQueueAllocateBuffer(queue, 4096, &buffer) == noErr)
            buffer!.pointee.mAudioDataByteSize = 4096
            #expect(AudioQueueEnqueueBuffer(queue, buffer!, 0, nil) == noErr)

            // Start and Prime need the device: "the specified audio hardware device could not be located".
            #expect(AudioQueueStart(queue, nil) == kAudioQueueErr_InvalidDevice)
            #expect(!isRunning(queue))
            var prepared: UInt32 = 7
            #expect(AudioQueuePrime(queue, 0, &prepared) == kAudioQueueErr_InvalidDevice)
            #expect(status(queue, kAudioQueueDeviceProperty_SampleRate, as: Float64.self).0 == kAudioQueueErr_InvalidDevice)
            #expect(status(queue, kAudioQueueDeviceProperty_NumberChannels, as: UInt32.self).0 == kAudioQueueErr_InvalidDevice)
            var target: CFString? = CFString.make("system")
            #expect(AudioQueueSetProperty(queue, kAudioQueueProperty_CurrentDevice, &target, 8) == kAudioQueueErr_InvalidDevice)
            var time = AudioTimeStamp()
            time.mSampleTime = 0
            time.mFlags = .sampleTimeValid
            var translated = AudioTimeStamp()
            #expect(AudioQueueDeviceTranslateTime(queue, &time, &translated) == kAudioQueueErr_InvalidDevice)
            #expect(AudioQueueDeviceGetNearestStartTime(queue, &time, 0) == kAudioQueueErr_InvalidDevice)
            // The device is not running: only mHostTime is valid (the reference's words).
            var now = AudioTimeStamp()
            #expect(AudioQueueDeviceGetCurrentTime(queue, &now) == noErr)
            #expect(now.mFlags == .hostTimeValid && now.mHostTime > 0)
            // What the queue knows itself: connected to nothing, its format, its name.
            var current: CFString?
            var size = UInt32(8)
            #expect(AudioQueueGetProperty(queue, kAudioQueueProperty_CurrentDevice, &current, &size) == noErr)
            #expect(current.map(String.init) == "")
            #expect(status(queue, kAudioQueueProperty_IsRunning, as: UInt32.self).1 == 0)
            // A recording queue needs the device to be made, as before.
            var input: AudioQueueRef?
            #expect(AudioQueueNewInput(&format, { _, _, _, _, _, _ in }, nil, nil, nil, 0, &input, device: device)
                    == kAudioQueueErr_InvalidDevice)
            #expect(input == nil)
            #expect(Date().timeIntervalSince(started) < 5, "no call waited for a server")
        }
    }

    /// The same queue, put in offline mode, renders what it is given to the bit (16-bit in, 16-bit
    /// out at its own rate), and reads the offline clock's rate as the device's.
    @Test func withNoServerAQueueRendersOfflineBitForBit() throws {
        try JackServer.withExclusiveAccess {
            let context = PlaybackContext(frames: 44100 + 321, channels: 2, framesPerBuffer: 4410)
            var format = lpcm(rate: 44100, channels: 2)
            var made: AudioQueueRef?
            let user = Unmanaged.passUnretained(context).toOpaque()
            #expect(AudioQueueNewOutput(&format, handleOutputBuffer, user, nil, nil, 0, &made,
                                        device: JackDriver(serverName: Self.absentServerName())) == noErr)
            let queue = try #require(made)
            defer { AudioQueueDispose(queue, true) }
            context.queue = queue
            for _ in 0..<3 {
                var buffer: AudioQueueBufferRef?
                #expect(AudioQueueAllocateBuffer(queue, UInt32(4410 * 4), &buffer) == noErr)
                handleOutputBuffer(user, queue, try #require(buffer))
            }
            var renderFormat = lpcm(rate: 44100, channels: 2, bits: 32, float: true)
            #expect(AudioQueueSetOfflineRenderFormat(queue, &renderFormat, nil) == noErr)
            var prepared: UInt32 = 0
            #expect(AudioQueuePrime(queue, 0, &prepared) == noErr, "offline, Prime needs no device")
            #expect(prepared > 0)
            #expect(status(queue, kAudioQueueDeviceProperty_SampleRate, as: Float64.self).1 == 44100)
            #expect(AudioQueueStart(queue, nil) == noErr)
            let rendered = try renderOffline(queue, channels: 2, frames: context.frameCount + 44100, request: 4096)
            #expect(rendered.count / 2 == context.frameCount)
            for c in 0..<2 {
                #expect(firstMismatch(deinterleave(rendered, channels: 2, channel: c), context.expected(channel: c)) == nil, "channel \(c)")
            }
        }
    }

    /// A provider whose server is not there until `running` is set: a ManualDriver behind it.
    final class LateServer: ServerBackedProvider, @unchecked Sendable {
        let driver = ManualDriver(sampleRate: 48000, periodFrames: 256)
        let running = Mutex(false)
        func openDevice(name: String, direction: DeviceDirection, layout: PortLayout) throws -> AudioDevice {
            guard running.withLock({ $0 }) else { throw QueueError.invalidDevice("no server") }
            return try driver.openDevice(name: name, direction: direction, layout: layout)
        }
        func defaultTarget(for direction: DeviceDirection) -> String { driver.defaultTarget(for: direction) }
        func serverIsRunning() -> Bool { running.withLock { $0 } }
    }

    /// A 16-bit stereo queue at `rate` on `server` playing `context` in the guides' way (three
    /// buffers filled by the callback, IsRunning listened to).
    func makeQueue(on server: LateServer, rate: Double, _ context: PlaybackContext) throws -> AudioQueueRef {
        var format = lpcm(rate: rate, channels: 2)
        var made: AudioQueueRef?
        let user = Unmanaged.passUnretained(context).toOpaque()
        #expect(AudioQueueNewOutput(&format, handleOutputBuffer, user, nil, nil, 0, &made, device: server) == noErr)
        let queue = try #require(made)
        context.queue = queue
        #expect(AudioQueueAddPropertyListener(queue, kAudioQueueProperty_IsRunning, isRunningListener, user) == noErr)
        for _ in 0..<3 {
            var buffer: AudioQueueBufferRef?
            #expect(AudioQueueAllocateBuffer(queue, UInt32(context.framesPerBuffer * 4), &buffer) == noErr)
            handleOutputBuffer(user, queue, try #require(buffer))
        }
        return queue
    }

    /// Runs the server's cycles until the queue reported its start and its stop (or 2000 cycles).
    func runUntilStopped(_ server: LateServer, _ context: PlaybackContext) {
        var cycles = 0
        while cycles < 2000 && !(context.runningChanges.withLock { $0.count >= 2 }) {
            server.driver.run(cycles: 1)
            cycles += 1
        }
    }

    /// A queue made before the server runs connects at the Start after it appeared: to the
    /// physical ports, at the server's rate, and plays every frame enqueued before, in order.
    @Test func aQueueMadeBeforeTheServerConnectsAtStartOnceItRuns() throws {
        let server = LateServer()
        let context = PlaybackContext(frames: 48000 + 77, channels: 2, framesPerBuffer: 4800)
        let queue = try makeQueue(on: server, rate: 48000, context)
        defer { AudioQueueDispose(queue, true) }
        #expect(AudioQueueStart(queue, nil) == kAudioQueueErr_InvalidDevice)
        #expect(server.driver.devices.isEmpty)

        server.running.withLock { $0 = true }
        server.driver.startRecordingPlayback()
        #expect(AudioQueueStart(queue, nil) == noErr)
        #expect(server.driver.devices.count == 1, "one client, opened at Start")
        var current: CFString?
        var size = UInt32(8)
        #expect(AudioQueueGetProperty(queue, kAudioQueueProperty_CurrentDevice, &current, &size) == noErr)
        #expect(current.map(String.init) == "system")
        #expect(status(queue, kAudioQueueDeviceProperty_NumberChannels, as: UInt32.self).1 == 2)
        runUntilStopped(server, context)
        #expect(context.runningChanges.withLock { $0 } == [1, 0])
        for c in 0..<2 {
            let played = server.driver.recordedPlayback(port: c).samples
            let first = try #require(played.firstIndex { $0 != 0 })
            let expected = context.expected(channel: c)
            #expect(firstMismatch(Array(played[first..<min(played.count, first + expected.count)]), expected) == nil, "channel \(c)")
        }
    }

    /// At a server rate other than the queue's, the queue made with none converts to it once
    /// connected (DeviceSampleRate says the server's, and a second of audio lasts a second).
    @Test func aQueueMadeBeforeTheServerTakesTheServersRate() throws {
        let server = LateServer()
        let context = PlaybackContext(frames: 44100, channels: 2, framesPerBuffer: 4410)
        let queue = try makeQueue(on: server, rate: 44100, context)
        defer { AudioQueueDispose(queue, true) }
        server.running.withLock { $0 = true }
        #expect(status(queue, kAudioQueueDeviceProperty_SampleRate, as: Float64.self).1 == 48000, "reading it connects")
        server.driver.startRecordingPlayback()
        #expect(AudioQueueStart(queue, nil) == noErr)
        runUntilStopped(server, context)
        #expect(context.runningChanges.withLock { $0 } == [1, 0])
        let played = server.driver.recordedPlayback(port: 0).samples
        let first = try #require(played.firstIndex { $0 != 0 })
        let last = try #require(played.lastIndex { $0 != 0 })
        #expect(abs((last - first + 1) - 48000) <= 64, "\(last - first + 1) frames at 48 kHz for a second at 44.1 kHz")
    }

    /// Audio decoded offline at the queue's rate (Prime) and still in the queue when it goes back
    /// online cannot play on a server at another rate: Start is kAudioQueueErr_CannotStart, as
    /// after a server's rate change, and stays so; nothing plays.
    @Test func audioPrimedOfflineCannotStartOnAServerAtAnotherRate() throws {
        let server = LateServer()
        let context = PlaybackContext(frames: 44100, channels: 2, framesPerBuffer: 4410)
        let queue = try makeQueue(on: server, rate: 44100, context)
        defer { AudioQueueDispose(queue, true) }
        var renderFormat = lpcm(rate: 44100, channels: 2, bits: 32, float: true)
        #expect(AudioQueueSetOfflineRenderFormat(queue, &renderFormat, nil) == noErr)
        #expect(AudioQueuePrime(queue, 0, nil) == noErr)
        #expect(AudioQueueSetOfflineRenderFormat(queue, nil, nil) == noErr)
        server.running.withLock { $0 = true }
        #expect(AudioQueueStart(queue, nil) == kAudioQueueErr_CannotStart)
        #expect(AudioQueueStart(queue, nil) == kAudioQueueErr_CannotStart)
        #expect(!isRunning(queue))
    }

    /// A JACK driver that is not there until `server` is set (the test starts a private server
    /// after making the queue).
    final class LateJack: ServerBackedProvider, @unchecked Sendable {
        let driver = Mutex<JackDriver?>(nil)
        func openDevice(name: String, direction: DeviceDirection, layout: PortLayout) throws -> AudioDevice {
            guard let driver = driver.withLock({ $0 }) else { throw QueueError.invalidDevice("no server") }
            return try driver.openDevice(name: name, direction: direction, layout: layout)
        }
        func defaultTarget(for direction: DeviceDirection) -> String { "system" }
        func serverIsRunning() -> Bool { driver.withLock { $0?.serverIsRunning() ?? false } }
    }

    /// On a real JACK server started after the queue was made: Start opens the queue's client,
    /// connects it to the system ports and plays (IsRunning 1, queue time moving, the client's
    /// ports and the server's rate reported), as a queue made with the server running does.
    @Test func aQueueMadeBeforeAJackServerStartsPlaysOnItOnceItRuns() throws {
        let late = LateJack()
        let context = PlaybackContext(frames: 44100 * 2, channels: 2, framesPerBuffer: 4410)
        var format = lpcm(rate: 44100, channels: 2)
        var made: AudioQueueRef?
        let user = Unmanaged.passUnretained(context).toOpaque()
        #expect(AudioQueueNewOutput(&format, handleOutputBuffer, user, nil, nil, 0, &made, device: late) == noErr)
        let queue = try #require(made)
        context.queue = queue
        for _ in 0..<3 {
            var buffer: AudioQueueBufferRef?
            #expect(AudioQueueAllocateBuffer(queue, UInt32(4410 * 4), &buffer) == noErr)
            handleOutputBuffer(user, queue, try #require(buffer))
        }
        let server = try JackServer(sampleRate: 48000)
        defer { server.stop() }
        try JackServer.withInProcessClients {
            late.driver.withLock { $0 = JackDriver(serverName: server.name) }
            #expect(AudioQueueStart(queue, nil) == noErr)
            #expect(waitUntil(5) { isRunning(queue) }, "the queue plays on the server")
            #expect(status(queue, kAudioQueueDeviceProperty_SampleRate, as: Float64.self).1 == 48000)
            #expect(status(queue, kAudioQueueDeviceProperty_NumberChannels, as: UInt32.self).1 == 2, "connected to system")
            var ports: CFString?
            var size = UInt32(8)
            #expect(AudioQueueGetProperty(queue, kAudioQueueProperty_JACKPortNames, &ports, &size) == noErr)
            #expect(ports.map(String.init)?.hasSuffix(":out_2") == true, "\(String(describing: ports))")
            var time = AudioTimeStamp()
            #expect(waitUntil(5) {
                AudioQueueGetCurrentTime(queue, nil, &time, nil) == noErr && time.mSampleTime > 4410
            }, "queue time moves: \(time.mSampleTime)")
            #expect(AudioQueueStop(queue, true) == noErr)
            #expect(AudioQueueDispose(queue, true) == noErr)
        }
    }

    // MARK: C programs with no server

    /// Apple's AQOfflineRenderTest, ported (Sources/Examples/AQOfflineRenderTest), with no JACK
    /// server: one buffer refilled by a callback on the rendering thread's run loop, float
    /// renders of half a buffer, ended by Flush and Stop(false), written as Apple's sample writes
    /// them: ExtAudioFile, a 16-bit CAF whose client format is the float render format. 16-bit
    /// in, float (s / 32768), 16-bit out: the file's samples exactly, every frame, nothing more.
    /// Also from an ALAC CAF, as Apple's sample renders its soundalac.caf (made here by ffmpeg):
    /// magic cookie and packet descriptions through the one buffer, lossless, so exact too.
    @Test(arguments: [(1, false), (2, false), (2, true)])
    func aqOfflineRenderTestRunsWithNoServer(channels: Int, alac: Bool) throws {
        let scratch = try Scratch()
        let program = scratch.url("aqofflinerender")
        let build = try CProgram.compile("Sources/Examples/AQOfflineRenderTest/aqofflinerender.c", into: program,
                                         flags: ["-Wall", "-Wextra", "-Werror", "-std=c11"])
        try #require(build.status == 0, "cc -Wall -Werror failed:\n\(build.diagnostics)")
        let frames = 66150 + 17
        let samples = (0..<(channels * frames)).map { i in signal(i / channels, i % channels) }
        let wav = scratch.path("in.wav")
        try writeWAV16(wav, samples: samples, channels: channels, rate: 44100)
        var input = wav
        if alac {
            input = scratch.path("in.caf")
            let made = try runReferee(try #require(tool("ffmpeg")), ["-nostdin", "-v", "error", "-y", "-i", wav, "-c:a", "alac", input])
            try #require(made.status == 0, "ffmpeg: \(made.stderr)")
        }
        let output = scratch.path("out.caf")
        let started = Date()
        let result = try runProcess([program.path, input, output], environment: Self.noServerEnvironment, timeout: 60)
        #expect(result.status == 0, "aqofflinerender exited \(result.status): \(result.output)\(result.error)")
        #expect(result.output.contains(alac ? "'alac'" : "'lpcm'"), "\(result.output.prefix(200))")
        #expect(result.output.contains("rendered \(frames) frames"), "\(result.output.suffix(400))")
        #expect(Date().timeIntervalSince(started) < 30)
        let format = try runReferee(try #require(tool("ffprobe")), ["-v", "error", "-show_entries", "stream=codec_name,sample_rate,channels",
                                                                    "-of", "csv=p=0", output])
        let probed = String(decoding: format.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(probed == "pcm_s16le,44100,\(channels)", "ffprobe: \(probed) \(format.stderr)")
        let rendered = try readInt16CAF(output, channels: channels)
        #expect(rendered.count == samples.count, "\(rendered.count / channels) frames of \(frames)")
        let same = rendered == samples  // (not inside #expect: a failure would print every sample)
        #expect(same, "first difference at sample \(zip(rendered, samples).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? -1)")
    }

    /// The C API with no server (CPrograms/no_server_start.c): NewOutput succeeds, Start, Prime
    /// and DeviceSampleRate are kAudioQueueErr_InvalidDevice and return at once, NewInput fails
    /// as before, and the queue renders offline what was enqueued.
    @Test func theCAPIWithNoServer() throws {
        let scratch = try Scratch()
        let program = scratch.url("no_server_start")
        let build = try CProgram.compile("Tests/AudioToolboxTests/CPrograms/no_server_start.c", into: program,
                                         flags: ["-Wall", "-Wextra", "-Werror", "-std=c11"])
        try #require(build.status == 0, "cc -Wall -Werror failed:\n\(build.diagnostics)")
        let started = Date()
        let result = try runProcess([program.path], environment: Self.noServerEnvironment, timeout: 30)
        #expect(result.status == 0, "\(result.output)\(result.error)")
        #expect(result.output.contains("AudioQueueStart \(kAudioQueueErr_InvalidDevice)"), "\(result.output)")
        #expect(Date().timeIntervalSince(started) < 10, "no call waited for a server")
    }

    /// offline_render.c (Apple's pattern with AudioFile output) bounces a 16-bit file bit for bit
    /// with no server, as it does with one (COfflineRenderExampleTests).
    @Test func offlineRenderExampleRunsWithNoServer() throws {
        let scratch = try Scratch()
        let program = scratch.url("offline_render")
        let build = try CProgram.compile(COfflineRenderExampleTests.source, into: program, flags: ["-Wall", "-Wextra", "-Werror", "-std=c11"])
        try #require(build.status == 0, "cc -Wall -Werror failed:\n\(build.diagnostics)")
        let frames = 48000 + 5
        let samples = (0..<(2 * frames)).map { i in signal(i / 2, i % 2) }
        let input = scratch.path("in.wav")
        try writeWAV16(input, samples: samples, channels: 2, rate: 48000)
        let output = scratch.path("out.caf")
        let result = try runProcess([program.path, input, output], environment: Self.noServerEnvironment, timeout: 60)
        #expect(result.status == 0, "offline_render exited \(result.status): \(result.output)\(result.error)")
        #expect(result.output.contains("rendered \(frames) frames"), "\(result.output)")
        let back = try readInt16CAF(output, channels: 2)
        let same = back == samples
        #expect(same, "first difference at sample \(zip(back, samples).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? -1)")
    }
}

/// Writes interleaved 16-bit samples as a WAVE file.
private func writeWAV16(_ path: String, samples: [Int16], channels: Int, rate: Int) throws {
    let file = try SoundFile(path: path, mode: .write,
                             format: SoundFile.Info(sampleRate: rate, channelCount: channels, format: SoundFile.Format(.wav, .pcm16)))
    _ = samples.withUnsafeBufferPointer { file.writeFrames($0) }
    try file.close()
}

/// Every sample of a file, interleaved, as libsndfile reads it into `Sample`.
private func readAll<Sample: SoundFileSample & Numeric>(_ path: String, channels: Int, as: Sample.Type) throws -> [Sample] {
    let file = try SoundFile(path: path, mode: .read)
    defer { try? file.close() }
    #expect(file.info.channelCount == channels)
    var samples = [Sample](repeating: 0, count: Int(file.frameCount) * channels)
    let transfer = samples.withUnsafeMutableBufferPointer { file.readFrames(into: $0) }
    return Array(samples.prefix(transfer.count * channels))
}

private func readInt16CAF(_ path: String, channels: Int) throws -> [Int16] { try readAll(path, channels: channels, as: Int16.self) }
