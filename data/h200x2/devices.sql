-- opsched data: table=devices schema=5 rows=1
INSERT INTO devices (backend, uuid, name, pci_bus_id, driver_version, runtime_version, library_versions, sm_count, cc_major, cc_minor, memory_bytes, l2_bytes, power_limit_w, has_power, has_energy, first_seen, last_seen) VALUES
('cuda', 'GPU-8b5ccc18-09de-96e4-83b2-78ed7a9ef5e6', 'NVIDIA H200', '0000:00:06.0', '580.159.04', '13.0', 'cudnn 9.19.0; cublas 13.1.0', 132, 9, 0, 150109880320, 62914560, 700.0, 1, 1, 1795842368.809158, 1795842426.832259);
