"""zps.framework"""
