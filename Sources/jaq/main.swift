import AudioToolbox
import Foundation
var id: AudioFileID?
print(kAudioFormatLinearPCM, kAudioFileWAVEType)
let rl = CFRunLoopGetCurrent()
print(CFRunLoopRunInMode(CFRunLoopMode.defaultMode, 0.01, false) == .timedOut)
var fl: AudioFileFlags = .eraseFile
var perm: AudioFilePermissions = .readPermission
var ts = AudioTimeStamp(); ts.mFlags = .sampleHostTimeValid
var asbd = AudioStreamBasicDescription(mSampleRate: 44100, mFormatID: kAudioFormatLinearPCM, mFormatFlags: kLinearPCMFormatFlagIsBigEndian | kLinearPCMFormatFlagIsSignedInteger | kLinearPCMFormatFlagIsPacked, mBytesPerPacket: 4, mFramesPerPacket: 1, mBytesPerFrame: 4, mChannelsPerFrame: 2, mBitsPerChannel: 16, mReserved: 0)
print(fl, perm, ts.mFlags, asbd.mFormatFlags, type(of: kAudioQueueErr_InvalidBuffer), type(of: kAudioQueueProperty_IsRunning), type(of: kAudioQueueParam_Volume))
let url = URL(fileURLWithPath: "/tmp/x") as CFURL
print(url)
