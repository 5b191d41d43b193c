/*
 * profiles/linuxmap.c — the tables that say what WPR's system keywords and
 * Windows' own event providers mean on Linux.
 *
 * System keywords: each maps to a part of ltr's system provider, or to
 * nothing. `available` is true for the parts the recorder implements
 * (src/system, docs/system-provider.md); the others are listed at start as
 * not yet available.
 *
 * Windows providers: GUIDs of the Windows components that the real profiles
 * in tests/profiles/wprp use, with their names. A few have a Linux counterpart
 * (kernel process and image-load events, the heap snapshot provider); the
 * rest are skipped with a report. Providers of applications (Office, Edge,
 * Chrome, V8) are not here: a Linux build of the program may well define
 * them, so they become ltr providers.
 */
#include "profiles/linuxmap.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static const ltr_syskw_map syskw[] = {
    {"ProcessThread", LTR_PART_PROCESSES, true},
    {"ProcessCounter", LTR_PART_MEMINFO, true},
    {"Loader", LTR_PART_MODULES, true},
    {"SampledProfile", LTR_PART_SAMPLES, true},
    {"PmcProfile", LTR_PART_SAMPLES, true},
    {"VirtualAllocation", LTR_PART_VMEM, true},
    {"VAMap", LTR_PART_VMEM, true},
    {"MemoryInfo", LTR_PART_MEMINFO, true},
    {"MemoryInfoWS", LTR_PART_MEMINFO, true},
    {"Memory", LTR_PART_MEMINFO, true},
    {"FootPrint", LTR_PART_MEMINFO, true},
    {"ReferenceSet", LTR_PART_MEMINFO, true},
    {"FileIO", LTR_PART_FILEIO, true},
    {"FileIOInit", LTR_PART_FILEIO, true},
    /* Windows kernel facilities with no part in ltr's system provider. */
    {"CSwitch", NULL, false},         {"CompactCSwitch", NULL, false},
    {"ReadyThread", NULL, false},     {"ThreadPriority", NULL, false},
    {"CpuConfig", NULL, false},       {"DPC", NULL, false},
    {"Interrupt", NULL, false},       {"WDFDPC", NULL, false},
    {"WDFInterrupt", NULL, false},    {"IdleStates", NULL, false},
    {"Power", NULL, false},           {"DiskIO", NULL, false},
    {"DiskIOInit", NULL, false},      {"Filename", NULL, false},
    {"SplitIO", NULL, false},         {"HardFaults", NULL, false},
    {"Registry", NULL, false},        {"RegistryHive", NULL, false},
    {"NetworkTrace", NULL, false},    {"KernelQueue", NULL, false},
    {"SynchronizationObjects", NULL, false}, {"Handle", NULL, false},
    {"ObjectManager", NULL, false},   {"ALPC", NULL, false},
    {"Pool", NULL, false},            {"ContiguousMemory", NULL, false},
    {"Session", NULL, false},         {"ProcessFreeze", NULL, false},
    {"Timer", NULL, false},           {"Drivers", NULL, false},
    {"Minifilter", NULL, false},      {"Hypervisor", NULL, false},
    {"SystemCall", NULL, false},      {"PageFaults", NULL, false},
    {"MemoryPressure", NULL, false},  {"Affinity", NULL, false},
};

const ltr_syskw_map *ltr_syskw_lookup(const char *keyword)
{
    for (size_t i = 0; i < sizeof syskw / sizeof syskw[0]; i++)
        if (strcasecmp(syskw[i].keyword, keyword) == 0)
            return &syskw[i];
    return NULL;
}

static const ltr_winprov winprov[] = {
    {"22fb2cd6-0e7b-422b-a0c7-2fad1fd0e716", "Microsoft-Windows-Kernel-Process", LTR_WINPROV_PROCESSES},
    {"2839ff94-8f12-4e1b-82e3-af7af77a450f", "KernelProcess", LTR_WINPROV_PROCESSES},
    {"2cb15d1d-5fc1-11d2-abe1-00a0c911f518", "Microsoft-Windows-ImageLoad", LTR_WINPROV_MODULES},
    {"901d2afa-4ff6-46d7-8d0e-53645e1a47f5", "Microsoft-Windows-Heap-Snapshot", LTR_WINPROV_HEAP_SNAPSHOT},
    {"d781ca11-61c0-4387-b83d-af52d3d2dd6a", "Win32 Heap Ranges", LTR_WINPROV_SKIP},
    {"e13c0d23-ccbc-4e12-931b-d9cc2eee27e4", "Microsoft-Windows-DotNETRuntime", LTR_WINPROV_SKIP},
    {"a669021c-c450-4609-a035-5af59af4df18", "Microsoft-Windows-DotNETRuntimeRundown", LTR_WINPROV_SKIP},
    {"e3652e49-ec27-4952-b1f6-f4cff62b33dc", "DotNetProvider", LTR_WINPROV_SKIP},
    {"6ad52b32-d609-4be9-ae07-ce8dae937e39", "Microsoft-Windows-RPC", LTR_WINPROV_SKIP},
    {"d8975f88-7ddb-4ed0-91bf-3adf48c48e0c", "Microsoft-Windows-RPCSS", LTR_WINPROV_SKIP},
    {"8c416c79-d49b-4f01-a467-e56d3aa8234c", "Microsoft-Windows-Win32k", LTR_WINPROV_SKIP},
    {"487d6e37-1b9d-46d3-a8fd-54ce8bdf8a53", "Microsoft.Windows.Win32k.TraceLogging", LTR_WINPROV_SKIP},
    {"c861d0e2-a2c1-4d36-9f9c-970bab943a12", "Microsoft-Windows-ThreadPool", LTR_WINPROV_SKIP},
    {"e53c6823-7bb8-44bb-90dc-3f86090d48a6", "Microsoft-Windows-Winsock-AFD", LTR_WINPROV_SKIP},
    {"55404e71-4db9-4deb-a5f5-8f86e46dde56", "Microsoft-Windows-Winsock-NameResolution", LTR_WINPROV_SKIP},
    {"1c95126e-7eea-49a9-a3fe-a378b03ddb4d", "Microsoft-Windows-DNS-Client", LTR_WINPROV_SKIP},
    {"2f07e2ee-15db-40f1-90ef-9d7ba282188a", "Microsoft-Windows-TCPIP", LTR_WINPROV_SKIP},
    {"43d1a55c-76d6-4f7e-995c-64c711e5cafe", "Microsoft-Windows-WinINet", LTR_WINPROV_SKIP},
    {"7d44233d-3055-4b9c-ba64-0d47ca40a232", "Microsoft-Windows-WinHttp", LTR_WINPROV_SKIP},
    {"50b3e73c-9370-461d-bb9f-26f32d68887d", "Microsoft-Windows-WebIO", LTR_WINPROV_SKIP},
    {"245f975d-909d-49ed-b8f9-9a75691d6b6b", "Microsoft-Windows-URLMon", LTR_WINPROV_SKIP},
    {"9e3b3947-ca5d-4614-91a2-7b624e0e7244", "Microsoft-IE", LTR_WINPROV_SKIP},
    {"3e0d88de-ae5c-438a-bb1c-c2e627f8aecb", "Microsoft.Windows.HangReporting", LTR_WINPROV_SKIP},
    {"ee97cdc4-b095-5c70-6e37-a541eb74c2b5", "Microsoft.Windows.AppLifeCycle.UI", LTR_WINPROV_SKIP},
    {"5526aed1-f6e5-5896-cbf0-27d9f59b6be7", "Microsoft.Windows.ApplicationModel.DesktopAppx", LTR_WINPROV_SKIP},
    {"0a002690-3839-4e3a-b3b6-96d8df868d99", "Microsoft-Antimalware-Engine", LTR_WINPROV_SKIP},
    {"68621c25-df8d-4a6b-aabc-19a22e296a7c", "Microsoft-Antimalware-Engine-Instrumentation", LTR_WINPROV_SKIP},
    {"8e92deef-5e17-413b-b927-59b2f06a3cfc", "Microsoft-Antimalware-RTP", LTR_WINPROV_SKIP},
    {"751ef305-6c6e-4fed-b847-02ef79d26aef", "Microsoft-Antimalware-Service", LTR_WINPROV_SKIP},
    {"e4b70372-261f-4c54-8fa6-a5a7914d73da", "Microsoft-Antimalware-Protection", LTR_WINPROV_SKIP},
    {"cfeb0608-330e-4410-b00d-56d8da9986e6", "Microsoft-Antimalware-AMFilter", LTR_WINPROV_SKIP},
    {"2a576b87-09a7-520e-c21a-4942f0271d67", "Microsoft-Antimalware-Scan-Interface", LTR_WINPROV_SKIP},
    {"911f2490-c3db-4781-94e6-7a9c404803e5", "Microsoft-Antimalware-UI", LTR_WINPROV_SKIP},
    {"d37e7910-79c8-57c4-da77-52bb646364cd", "Microsoft-Antimalware-UacScan", LTR_WINPROV_SKIP},
    {"fae96d09-ade1-5223-0098-af7b67348531", "Microsoft-Windows-SENSE", LTR_WINPROV_SKIP},
    {"b6d775ef-1436-4fe6-bad3-9e436319e218", "Microsoft-Windows-SenseIR", LTR_WINPROV_SKIP},
    {"65a1b6fc-4c24-59c9-e3f3-ad11ac510b41", "Microsoft.Windows.Sense.Client", LTR_WINPROV_SKIP},
    {"4ee76bd8-3cf4-44a0-a0ac-3937643e37a3", "Microsoft-Windows-CodeIntegrity", LTR_WINPROV_SKIP},
    {"28dcc28b-3e31-527b-efd6-b4cc4d73d158", "Microsoft.Windows.Security.CodeIntegrity.NWActivity", LTR_WINPROV_SKIP},
    {"3a82f218-fcc2-4183-afe9-a0febc4416ee", "Microsoft.Windows.Security.CodeIntegrity.NWActivityVerbose", LTR_WINPROV_SKIP},
    {"cbda4dbf-8d5d-4f69-9578-be14aa540d22", "Microsoft-Windows-AppLocker", LTR_WINPROV_SKIP},
    {"3cb2a168-fe19-4a4e-bdad-dcf422f13473", "Microsoft-Windows-AppID", LTR_WINPROV_SKIP},
    {"8c493695-3df4-40cb-b11d-9edc41d5d2ab", "PerfTrack", LTR_WINPROV_SKIP},
    {"030f2f57-abd0-4427-bcf1-3a3587d7dc7d", "Microsoft-Windows-Diagnostics-PerfTrack", LTR_WINPROV_SKIP},
    {"c06ed57a-a7bd-42d7-b5ff-77a9dec5732d", "Microsoft-Windows-Diagnostics-PerfTrack-Counters", LTR_WINPROV_SKIP},
    {"6af9e939-1d95-430a-afa3-7526fadee37d", "Microsoft-Windows-Security-SPP", LTR_WINPROV_SKIP},
    {"9cc69d1c-7917-4acd-8066-6bf8b63e551b", "Microsoft-AppV", LTR_WINPROV_SKIP},
    {"30336ed4-e327-447c-9de0-51b652c86108", "Microsoft-Windows-Shell-Core", LTR_WINPROV_SKIP},
    {"314de49f-ce63-4779-ba2b-d616f6963a88", "Microsoft-Windows-NCSI", LTR_WINPROV_SKIP},
    {"9580d7dd-0379-4658-9870-d5be7d52d6de", "Microsoft-Windows-WLAN-AutoConfig", LTR_WINPROV_SKIP},
    {"988c59c5-0a1c-45b6-a555-0c62276e327d", "Microsoft-Windows-SMBClient", LTR_WINPROV_SKIP},
    {"d49918cf-9489-4bf1-9d7b-014d864cf71f", "Microsoft-Windows-ProcessStateManager", LTR_WINPROV_SKIP},
    {"e6835967-e0d2-41fb-bcec-58387404e25a", "Microsoft-Windows-BrokerInfrastructure", LTR_WINPROV_SKIP},
    {"6fe1cbf0-a23c-41fe-93ba-6929ac3ab4e7", "Microsoft-Windows-AssessmentExecutionEngine", LTR_WINPROV_SKIP},
    {"b675ec37-bdb6-4648-bc92-f3fdc74d3ca2", "Microsoft-Windows-Kernel-EventTracing", LTR_WINPROV_SKIP},
    {"43ac453b-97cd-4b51-4376-db7c9bb963ac", "Microsoft.Windows.DiagTrack", LTR_WINPROV_SKIP},
    {"56dc463b-97e8-4b59-e836-ab7c9bb96301", "Microsoft-Windows-DiagTrack", LTR_WINPROV_SKIP},
    {"1377561d-9312-452c-ad13-c4a1c9c906e0", "Microsoft.Windows.FaultReporting", LTR_WINPROV_SKIP},
    {"cc79cf77-70d9-4082-9b52-23f3a3e92fe4", "Microsoft.Windows.WindowsErrorReporting", LTR_WINPROV_SKIP},
    {"bf406804-6afa-46e7-8a48-6c357e1d6d61", "Microsoft-Windows-COMRuntime", LTR_WINPROV_SKIP},
    {"9c205a39-1250-487d-abd7-e831c6290539", "Microsoft-Windows-Kernel-PnP", LTR_WINPROV_SKIP},
    {"43e63da5-41d1-4fbf-aded-1bbed98fdd1d", "Microsoft-Windows-Subsys-SMSS", LTR_WINPROV_SKIP},
    {"e8316a2d-0d94-4f52-85dd-1e15b66c5891", "Microsoft-Windows-Subsys-Csr", LTR_WINPROV_SKIP},
    {"0063715b-eeda-4007-9429-ad526f62696e", "Microsoft-Windows-Services", LTR_WINPROV_SKIP},
    {"9d55b53d-449b-4824-a637-24f9d69aa02f", "Microsoft-Windows-Winsrv", LTR_WINPROV_SKIP},
    {"206f6dea-d3c5-4d10-bc72-989f03c8b84b", "Microsoft-Windows-Wininit", LTR_WINPROV_SKIP},
    {"dbe9b383-7cf3-4331-91cc-a3cb16a3b538", "Microsoft-Windows-Winlogon", LTR_WINPROV_SKIP},
    {"331c3b3a-2005-44c2-ac5e-77220c37d6b4", "Microsoft-Windows-Kernel-Power", LTR_WINPROV_SKIP},
    {"63d2bb1d-e39a-41b8-9a3d-52dd06677588", "Microsoft-Windows-Shell-AuthUI", LTR_WINPROV_SKIP},
};

/* Name prefixes of Windows' own components. */
static const char *const windows_prefixes[] = {
    "Microsoft-Windows-", "Microsoft.Windows.", "Microsoft-Antimalware-", "Microsoft-IE",
    "Microsoft-JScript",
};

static bool prefixed(const char *name)
{
    for (size_t i = 0; i < sizeof windows_prefixes / sizeof windows_prefixes[0]; i++)
        if (strncasecmp(name, windows_prefixes[i], strlen(windows_prefixes[i])) == 0)
            return true;
    return false;
}

const ltr_winprov *ltr_winprov_lookup(const char *name, const ltr_guid *guid,
                                      ltr_winprov *scratch)
{
    char text[37];
    ltr_guid_format(guid, text);
    for (size_t i = 0; i < sizeof winprov / sizeof winprov[0]; i++)
        if (strcasecmp(winprov[i].guid, text) == 0 || strcasecmp(winprov[i].name, name) == 0)
            return &winprov[i];
    if (!prefixed(name))
        return NULL;
    *scratch = (ltr_winprov){NULL, name, LTR_WINPROV_SKIP};
    return scratch;
}
