"""zps.testing"""
