"""zps.transport"""
