-- opsched data: table=devices schema=4 rows=1
INSERT INTO devices (backend, uuid, name, pci_bus_id, driver_version, runtime_version, library_versions, sm_count, cc_major, cc_minor, memory_bytes, l2_bytes, power_limit_w, has_power, has_energy, first_seen, last_seen) VALUES
('cuda', 'GPU-0bb49ec7-769f-eff5-f095-5ed83d5591f9', 'NVIDIA H100 80GB HBM3', '0000:00:06.0', '580.159.04', '13.0', 'cudnn 9.19.0; cublas 13.1.0', 132, 9, 0, 85017493504, 52428800, 700.0, 1, 1, 1795351967.153367, 1795352973.589409);
